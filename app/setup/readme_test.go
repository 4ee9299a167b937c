package setup

import (
	"os"
	"strings"
	"testing"
)

// The README's permission table is what the manifest asks for: a permission
// added, dropped or widened in code without the README saying why fails.
func TestREADMEListsThePermissionsTheManifestAsksFor(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "| permission | access | why |\n|---|---|---|\n")
	if !ok {
		t.Fatal("README.md has no permission table (| permission | access | why |)")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	documented := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			t.Fatalf("README permission row %q has no why", line)
		}
		documented[strings.TrimSpace(cells[0])] = strings.TrimSpace(cells[1])
	}
	if len(documented) != len(Permissions) {
		t.Errorf("README documents %d permissions, the manifest asks for %d", len(documented), len(Permissions))
	}
	for _, p := range Permissions {
		if documented[p.Name] != p.Access {
			t.Errorf("README says %s: %q, the manifest asks for %q", p.Name, documented[p.Name], p.Access)
		}
	}
}
