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
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
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

// A query parameter an endpoint does not take is refused, naming it and
// the one most likely meant: ignored, ?env=prod listed the releases of
// every environment as if they were prod's.
func TestListsRefuseParametersTheyDoNotTake(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.URL(t, "sqlite"), Options{})
	cases := []struct{ path, field, want string }{
		{"/api/v1/releases?app=checkout&env=prod", "env",
			"env: unknown parameter; this endpoint takes app, environment, cluster, state, limit; did you mean environment?"},
		{"/api/v1/audit?release=r1", "release", "did you mean release_id?"},
		{"/api/v1/deliveries?limt=5", "limt", "did you mean limit?"},
		{"/api/v1/eligibility?app=checkout&environment=prod&cluster=eu&image=v1&windw=3", "windw", "did you mean window?"},
		{"/api/v1/releases/r1/audit?type=drift_detected", "type", "type: unknown parameter; this endpoint takes limit"},
	}
	for _, c := range cases {
		var refusal struct{ Error, Field string }
		code := ts.api(t, c.path, &refusal)
		if code != 400 || refusal.Field != c.field || !strings.Contains(refusal.Error, c.want) {
			t.Errorf("GET %s: %d %+v; want 400 on %s, saying %q", c.path, code, refusal, c.field, c.want)
		}
	}
	if code := ts.api(t, "/api/v1/releases?app=checkout&environment=prod&cluster=eu&state=healthy&limit=5", nil); code != 200 {
		t.Errorf("GET /api/v1/releases with every parameter it takes: %d, want 200", code)
	}
}
