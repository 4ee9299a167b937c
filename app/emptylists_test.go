package app

import (
	"encoding/json"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A list the API answers with nothing in it is an empty JSON array, as
// /api/v1/deliveries answers, not null: `ripcord releases list --json`
// on a new server, or a client that counts the releases, got null.
func TestEmptyListsAreArraysNotNull(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		for path, field := range map[string]string{
			"/api/v1/releases":                      "releases",
			"/api/v1/releases?app=none":             "releases",
			"/api/v1/audit":                         "events",
			"/api/v1/audit?type=drift_detected":     "events",
			"/api/v1/deliveries":                    "deliveries",
			"/api/v1/rollouts?release_id=no-such-1": "rollouts",
		} {
			var out map[string]json.RawMessage
			if code := ts.api(t, path, &out); code != 200 {
				t.Fatalf("GET %s: %d", path, code)
			}
			if got := string(out[field]); got != "[]" {
				t.Errorf("GET %s: %s is %s, want []", path, field, got)
			}
		}
	})
}
