package configload_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

const repo = "acme/checkout"

func configChecks(e *e2etest.Env) []githubtest.CheckRun {
	var out []githubtest.CheckRun
	for _, c := range e.GitHub.CheckRuns(repo) {
		if c.Name == configload.CheckName {
			out = append(out, c)
		}
	}
	return out
}

// A push that breaks the config gets a failing ripcord/config check run
// with the problem; the push that fixes it gets a passing one; a deploy
// failure while it is broken is not silent either.
func TestConfigThatFailsToLoadIsAFailingCheckRun(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := e2etest.Start(t, dbURL, app.Options{})
		bad := e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", "version: 1\napps:\n  checkout:\n    enviroments: {}\n")
		id := e.Deliver("push", e.Push(repo, bad, ".github/ripcord.yml"))
		e.Redeliver("push", id, e.Push(repo, bad, ".github/ripcord.yml"))
		e.WaitFor("the failing check", 15*time.Second, func() bool { return len(configChecks(e)) == 1 })
		c := configChecks(e)[0]
		if c.HeadSHA != bad || c.Conclusion != "failure" || !strings.Contains(c.Summary, "apps.checkout.enviroments") {
			t.Errorf("check on %s: %s %q", c.HeadSHA, c.Conclusion, c.Summary)
		}
		// The fake may show the check run a moment before it has recorded the
		// request that made it: wait for the request too.
		var body struct {
			Output struct{ Annotations []map[string]any } `json:"output"`
		}
		e.WaitFor("the check run's create request", 15*time.Second, func() bool {
			for _, r := range e.GitHub.Requests() {
				if r.Method == "POST" && r.Route == "/repos/{owner}/{repo}/check-runs" {
					return json.Unmarshal(r.Body, &body) == nil
				}
			}
			return false
		})
		if len(body.Output.Annotations) != 1 || body.Output.Annotations[0]["start_line"] != float64(4) {
			t.Errorf("annotations sent: %v, want one at line 4", body.Output.Annotations)
		}

		// A deploy run fails while the config is broken: a check on its commit says why nothing happens.
		run := e.GitHub.PutFile(repo, "main", "app.txt", "v2")
		e.Deliver("workflow_run", e.WorkflowRun(e2etest.Run{Repository: repo, ID: 7001, Attempt: 1, Conclusion: "failure", HeadSHA: run}))
		e.WaitFor("the check on the failed run's commit", 15*time.Second, func() bool { return len(configChecks(e)) == 2 })

		good := e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", "version: 1\napps:\n  checkout:\n    environments: {}\n")
		e.Deliver("push", e.Push(repo, good, ".github/ripcord.yml"))
		e.Deliver("push", e.Push(repo, good, "README.md"))
		e.WaitFor("the passing check", 15*time.Second, func() bool { return len(configChecks(e)) == 3 })
		e.Settle("config_check", "delivery")
		checks := configChecks(e)
		if len(checks) != 3 || checks[1].HeadSHA != run || checks[1].Conclusion != "failure" || checks[2].HeadSHA != good || checks[2].Conclusion != "success" {
			t.Errorf("checks: %+v", checks)
		}
		if n := e.Int(`SELECT COUNT(*) FROM episodes`); n != 0 {
			t.Errorf("episodes = %d: ripcord acted on a config that does not load", n)
		}
		if bad := e.Invalid(); len(bad) > 0 {
			t.Errorf("requests GitHub would reject: %v", bad)
		}
	})
}

func TestValidateNeedsTheAPIToken(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := e2etest.Start(t, dbURL, app.Options{})
		status, body := e.Do("POST", "/api/v1/validate", "application/yaml", []byte("version: 1\nstall_after: soon\n"))
		if status != 200 || !strings.Contains(string(body), `"valid": false`) || !strings.Contains(string(body), `"path": "stall_after"`) {
			t.Errorf("POST /api/v1/validate: %d %s", status, body)
		}
		req := e.URL + "/api/v1/validate"
		resp, err := httpPost(req)
		if err != nil || resp != 401 {
			t.Errorf("without a token: %d %v, want 401", resp, err)
		}
	})
}

func httpPost(url string) (int, error) {
	resp, err := http.Post(url, "application/yaml", strings.NewReader("version: 1\n"))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
