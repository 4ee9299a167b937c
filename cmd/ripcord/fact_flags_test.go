package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// pageFlags reads `ripcord fact -h`: the flag that fills each fact field
// it names ("-release-id string / fact field release_id").
func pageFlags(t *testing.T) map[string]string {
	t.Helper()
	code, help, _ := ripcord(t, nil, "fact", "-h")
	if code != 0 {
		t.Fatalf("ripcord fact -h: exit %d\n%s", code, help)
	}
	flags := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z-]+)(?: \w+)?\n\s+fact field (\w+)`).FindAllStringSubmatch(help, -1) {
		flags[m[2]] = "--" + m[1]
	}
	return flags
}

// A fact typed from flags and refused names the flags the user typed, as
// the -h page pairs them with the fields: the server's 400 names JSON
// fields (release_id, uid), which the user never wrote. A fact from
// --file keeps the JSON names, which are what the user wrote there.
func TestFactFromFlagsRefusedNamesTheFlags(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	flags := pageFlags(t)
	for _, field := range []string{"uid", "release_id"} {
		if flags[field] == "" {
			t.Fatalf("ripcord fact -h names no flag for fact field %s: %v", field, flags)
		}
	}
	url := inProcessServer(t)
	env := []string{"RIPCORD_SERVER=" + url, "RIPCORD_CLUSTER_TOKEN=eu-token"}
	// says reports whether stderr has a problem line for name: the first
	// line follows the server's status.
	says := func(stderr, name string) bool {
		return regexp.MustCompile(`(?m)(^|server answered 400: )` + regexp.QuoteMeta(name) + `: `).MatchString(stderr)
	}

	t.Run("several fields", func(t *testing.T) {
		code, _, stderr := ripcord(t, env, "fact", "--cluster", "prod-eu", "--namespace", "shop", "--name", "checkout",
			"--phase", "Healthy", "--generation", "1")
		for _, field := range []string{"uid", "release_id"} {
			if code != 1 || !says(stderr, flags[field]) || says(stderr, field) {
				t.Errorf("exit %d, stderr %q; want 1 and a line for %s, not for the JSON field %s", code, stderr, flags[field], field)
			}
		}
	})
	t.Run("one field", func(t *testing.T) {
		if flags["step"] == "" {
			t.Fatalf("ripcord fact -h names no flag for fact field step: %v", flags)
		}
		code, _, stderr := ripcord(t, env, "fact", "--cluster", "prod-eu", "--namespace", "shop", "--name", "checkout",
			"--uid", "u-1", "--phase", "Progressing", "--generation", "1", "--release-id", "r-1", "--step", "3", "--step-count", "2")
		if code != 1 || !says(stderr, flags["step"]) || !strings.Contains(stderr, "(flag "+flags["step"]+")") {
			t.Errorf("exit %d, stderr %q; want 1, the problem and the answer's field said with %s", code, stderr, flags["step"])
		}
	})
	t.Run("from --file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "fact.json")
		if err := os.WriteFile(file, []byte(`{"source":"deployment","cluster":"prod-eu","namespace":"shop","name":"checkout",
			"generation":1,"phase":"Healthy","observed_at":"`+time.Now().UTC().Format(time.RFC3339)+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := ripcord(t, env, "fact", "--cluster", "prod-eu", "--file", file)
		for _, field := range []string{"uid", "release_id"} {
			if code != 1 || !says(stderr, field) || says(stderr, flags[field]) {
				t.Errorf("exit %d, stderr %q; want 1 and a line for the file's field %s", code, stderr, field)
			}
		}
	})
}
