package actions

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollout"
)

// probeConfig is one wave on one host whose gate is a probe the region's
// runners send; the interval is long so that a slow test machine still
// posts in time.
func probeRolloutConfig(host string) string {
	return fmt.Sprintf(`version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        targets:
          - {host: "%s", labels: {region: eu-1, az: eu-1a}}
        rollout:
          waves:
            - {name: all, select: "region=eu-1"}
          health:
            interval: 5m
            probes:
              - {url: "http://{host}/healthz"}
`, host)
}

// TestProbeModeAgainstARealServer rolls a release out on a real `ripcord
// serve` with the fake GitHub: when the rollout dispatches its probe
// workflow, the action runs in mode probe with that dispatch's inputs, as
// the workflow's job would, probes the target from "the runner" and posts
// the results with a real OIDC token; the rollout then passes its gate.
// Probing a target that answers 500 fails it instead.
func TestProbeModeAgainstARealServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		want   rolloutflow.Status
	}{
		{"a healthy target", http.StatusOK, rolloutflow.Succeeded},
		{"a target answering 500", http.StatusInternalServerError, rolloutflow.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probeRollout(t, tc.status, tc.want)
		})
	}
}

func probeRollout(t *testing.T, status int, want rolloutflow.Status) {
	const repo = "acme/checkout"
	probed := make(chan string, 10)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probed <- r.URL.Path
		w.WriteHeader(status)
	}))
	t.Cleanup(target.Close)
	host := strings.TrimPrefix(target.URL, "http://")

	e := e2etest.Start(t, testdb.URL(t, "sqlite"), app.Options{})
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", probeRolloutConfig(host))
	e.Install(repo)
	sha := strings.Repeat("c", 40)
	code, body := e.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "r1:prod-eu/prod",
		"app": "checkout", "environment": "prod", "cluster": "prod-eu", "repository": "`+repo+`", "image": "v1",
		"git_revision": "`+sha+`"}`))
	if code != http.StatusCreated {
		t.Fatalf("POST release answered %d: %s", code, body)
	}
	const wait = 30 * time.Second
	e.WaitFor("the batch's dispatch", wait, func() bool { return len(e.GitHub.Dispatches(repo)) == 1 })
	deploy := e.GitHub.Dispatches(repo)[0]
	e.Deliver("workflow_run", e.WorkflowRun(e2etest.Run{Repository: repo, ID: deploy.RunID, Attempt: 1, Conclusion: "success", HeadSHA: sha}))
	e.WaitFor("the probe workflow's dispatch", wait, func() bool { return len(e.GitHub.Dispatches(repo)) == 2 })
	d := e.GitHub.Dispatches(repo)[1]
	if d.Workflow != rollout.DefaultProbeWorkflow || d.Inputs["region"] != "eu-1" {
		t.Fatalf("second dispatch %+v, want %s on eu-1's runners", d, rollout.DefaultProbeWorkflow)
	}

	f := newFakes(t)
	token := e.Issuer.Token(t, map[string]any{"repository": repo}, oidctest.WithAudience(oidctest.Audience))
	f.token.script(reply{200, `{"count":1,"value":"` + token + `"}`})
	inputs := map[string]string{"mode": "probe", "server": e.URL, "audience": oidctest.Audience, "fail-on-error": "true",
		"rollout-id": fmt.Sprint(d.Inputs["rollout_id"]), "reading": fmt.Sprint(d.Inputs["reading"]), "probes": fmt.Sprint(d.Inputs["probes"])}
	r := runAction(t, f, inputs, map[string]string{"GITHUB_RUN_ID": fmt.Sprint(d.RunID)})
	if r.code != 0 || !strings.Contains(r.outputs, "outcome=stored") {
		t.Fatalf("the action in mode probe: exit %d, outputs %q\n%s\n%s", r.code, r.outputs, r.stdout, r.stderr)
	}
	if got := <-probed; got != "/healthz" {
		t.Errorf("the target was probed at %s, want /healthz", got)
	}

	var st rolloutflow.StatusJSON
	e.WaitFor("the rollout to end", wait, func() bool {
		_, b := e.Do("GET", "/api/v1/rollouts/"+url.PathEscape(fmt.Sprint(d.Inputs["rollout_id"])), "", nil)
		_ = json.Unmarshal(b, &st)
		return st.Rollout.Status == rolloutflow.Succeeded || st.Rollout.Status == rolloutflow.Failed
	})
	if st.Rollout.Status != want {
		t.Fatalf("rollout %s (gate %q), want %s", st.Rollout.Status, st.Rollout.Stages[0].Gate, want)
	}
	if want == rolloutflow.Failed && !strings.Contains(st.Rollout.Stages[0].Gate, "status 500") {
		t.Errorf("gate %q does not say what the runner saw", st.Rollout.Stages[0].Gate)
	}

	// The same results again change nothing; a token of another repository
	// is refused.
	r = runAction(t, f, inputs, map[string]string{"GITHUB_RUN_ID": fmt.Sprint(d.RunID)})
	if r.code == 0 {
		t.Errorf("results for a reading already taken were accepted:\n%s", r.stdout)
	}
	other := e.Issuer.Token(t, map[string]any{"repository": "acme/other"}, oidctest.WithAudience(oidctest.Audience))
	f.token.script(reply{200, `{"count":1,"value":"` + other + `"}`})
	if r := runAction(t, f, inputs, nil); r.code == 0 || !strings.Contains(r.stdout, "403") {
		t.Errorf("another repository's token: exit %d\n%s", r.code, r.stdout)
	}
}
