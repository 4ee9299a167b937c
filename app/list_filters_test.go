package app

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// An unknown filter value was answered with Go's print of a slice for the
// states ("states are [opened progressing …]") and with no list at all for
// the audit's types, so a person had to read the code to find a valid one.
func TestListFiltersNameTheValuesTheyTake(t *testing.T) {
	ts := startServer(t, testdb.URL(t, "sqlite"), Options{})
	cases := []struct{ path, field, want string }{
		{"/api/v1/releases?state=bogus", "state",
			`unknown state "bogus"; states are opened, progressing, paused, healthy, degraded, aborted, failed, superseded, rolled-back`},
		{"/api/v1/audit?type=bogus", "type", `unknown audit event type "bogus"; types are deployment_received, failure_detected, `},
	}
	for _, c := range cases {
		var refusal struct{ Error, Field string }
		code := ts.api(t, c.path, &refusal)
		if code != 400 || refusal.Field != c.field || !strings.HasPrefix(refusal.Error, c.want) {
			t.Errorf("GET %s: %d %+v; want 400 on %s, starting %q", c.path, code, refusal, c.field, c.want)
		}
	}
}
