package rolloutflow_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/repoconfig"
)

// A start refused because the repository's config does not validate names
// the first problem's key in field, as any 4xx names what to fix, and
// lists every problem as `ripcord validate` prints them: whoever started it
// fixes the file in one go rather than one problem per try.
func TestRolloutStartOnAnInvalidConfigNamesTheProblems(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, startOnInvalidConfig)
}

func startOnInvalidConfig(t *testing.T, dbURL string) {
	e := e2etest.Start(t, dbURL, app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.Install(repo)
	bad := strings.Replace(e2eConfig, `select: "canary!=true"`, `select: "canary=="`, 1)
	bad = strings.Replace(bad, "approvals_between: [canary]", "approvals_between: [nowhere]", 1)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", bad)
	want := repoconfig.ValidateWith(".github/ripcord.yml", []byte(bad), repoconfig.Options{})
	if len(want) < 2 {
		t.Fatalf("the config has %d problems, want two or more for this test: %q", len(want), want)
	}

	code, body := e.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"repository": "acme/checkout",
		"app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v2", "author": "alice"}`))
	var got pipeline.APIError
	if err := json.Unmarshal(body, &got); err != nil || code != http.StatusUnprocessableEntity {
		t.Fatalf("answered %d %s (%v), want 422 with an error", code, body, err)
	}
	if first := "apps.checkout.environments.prod.rollout.waves[1].select"; got.Field != first {
		t.Errorf("field %q, want the first problem's key %q (problems: %q)", got.Field, first, want)
	}
	lines := strings.Split(got.Error, "\n")
	if len(lines) != len(want)+1 || !strings.HasPrefix(lines[0], "rollout of checkout-v2:prod-eu/prod: ") {
		t.Fatalf("error %q: want a line saying what was refused, then the %d problems one a line", got.Error, len(want))
	}
	for i, p := range want {
		if lines[i+1] != p {
			t.Errorf("problem line %d is %q, want %q as ripcord validate prints it", i+1, lines[i+1], p)
		}
	}
	if n := e.Int(`SELECT COUNT(*) FROM records WHERE release_id = $1`, "checkout-v2:prod-eu/prod"); n != 0 {
		t.Errorf("the refused start stored %d releases, want none", n)
	}
}
