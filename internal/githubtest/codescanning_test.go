package githubtest

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestCodeScanningAlertsByRefAndState(t *testing.T) {
	s := NewServer(t)
	cs := ServeCodeScanning(s)
	cs.Analyzed("acme/checkout", "abc123", CodeScanningAlert{RuleID: "go/sql-injection", Severity: "error", SecuritySeverity: "high"},
		CodeScanningAlert{RuleID: "go/unused", Severity: "note", State: "dismissed"})
	get := func(query string) (int, []map[string]any) {
		resp, err := http.Get(s.URL() + "repos/acme/checkout/code-scanning/alerts" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []map[string]any
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, out
	}
	code, open := get("?ref=abc123&state=open")
	if code != http.StatusOK || len(open) != 1 || open[0]["rule"].(map[string]any)["id"] != "go/sql-injection" {
		t.Fatalf("open alerts at abc123: %d %v, want the one open alert", code, open)
	}
	if code, _ := get("?ref=never-analyzed&state=open"); code != http.StatusNotFound {
		t.Fatalf("a ref without analysis answered %d, want 404 as GitHub does", code)
	}
}
