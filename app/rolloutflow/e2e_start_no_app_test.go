package rolloutflow_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A server started without a GitHub App (no github.app_id and
// github.private_key) refuses to start a rollout or a rollback because of
// its own set-up, not the request: both APIs answer 503 naming the settings
// to configure, with no field (nothing in the request is wrong), before and
// after an installation of the repository is stored, in the same words
// (pipeline.NoApp's, which name /setup); its code,
// app_not_configured, tells a client (the CLI) that asking again is
// pointless, where another 503 is worth asking again.
func TestStartWithoutAppIsTheServersSetUp(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, startWithoutApp)
}

func startWithoutApp(t *testing.T, dbURL string) {
	e := e2etest.StartWith(t, dbURL, app.Options{}, func(c *config.Config) { c.GitHub.AppID, c.GitHub.PrivateKey = 0, nil })
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", e2eConfig)
	requests := []struct{ name, path, body string }{
		{"rollout start", "/api/v1/rollouts", `{"repository": "acme/checkout", "app": "checkout", "environment": "prod",
			"cluster": "prod-eu", "version": "v2", "author": "alice"}`},
		{"rollback", "/api/v1/rollbacks", `{"repository": "acme/checkout", "app": "checkout", "environment": "prod",
			"cluster": "prod-eu", "reason": "errors up"}`},
	}
	first := map[string]string{} // each API's answer before an installation is stored
	check := func(when string) {
		t.Helper()
		for _, r := range requests {
			code, body := e.Do("POST", r.path, "application/json", []byte(r.body))
			var got struct{ Error, Field, Code string }
			_ = json.Unmarshal(body, &got)
			if was, ok := first[r.name]; !ok {
				first[r.name] = got.Error
			} else if got.Error != was {
				t.Errorf("%s, %s: answered %q, want the same words as with no installation stored: %q", when, r.name, got.Error, was)
			}
			if !strings.Contains(got.Error, "/setup") {
				t.Errorf("%s, %s: answered %q, want it to name /setup, where an App is registered", when, r.name, got.Error)
			}
			if code != http.StatusServiceUnavailable || got.Field != "" ||
				!strings.Contains(got.Error, "github.app_id") || !strings.Contains(got.Error, "github.private_key") {
				t.Errorf("%s, %s: answered %d %s, want 503 with no field naming github.app_id and github.private_key",
					when, r.name, code, body)
			}
			if got.Code != "app_not_configured" {
				t.Errorf("%s, %s: answered code %q (%s), want app_not_configured", when, r.name, got.Code, body)
			}
		}
	}
	check("no installation stored")
	e.Install(repo)
	check("an installation stored")
	if n := e.Int(`SELECT COUNT(*) FROM records`); n != 0 {
		t.Errorf("%d releases stored by refused requests, want 0", n)
	}
}
