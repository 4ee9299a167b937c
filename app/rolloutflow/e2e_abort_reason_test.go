package rolloutflow_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/mdtext"
	"github.com/ripcord/ripcord/internal/testdb"
)

// An abort's reason is free text from whoever holds an API token. The API
// and the CLI give it back exact; the ripcord/rollout check run, which
// GitHub renders as markdown in ripcord's name, shows it as typed but inert:
// it mentions no one and links nowhere.
func TestAnAbortsReasonIsExactInTheAPIAndInertInTheCheckRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, abortReasonShown)
}

func abortReasonShown(t *testing.T, dbURL string) {
	const reason = "paging @someone, see [the runbook](https://evil.example/rb) or https://evil.example/x"
	s := &scene{Env: startOn(t, dbURL, e2eConfig, "admin")}
	code, body := s.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"repository": "acme/checkout",
		"app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v2", "author": "alice"}`))
	var st rolloutflow.StatusJSON
	if err := json.Unmarshal(body, &st); err != nil || code != http.StatusCreated {
		t.Fatalf("POST /api/v1/rollouts answered %d %s (%v)", code, body, err)
	}
	s.id = st.ID
	s.WaitFor("the canary's dispatch", wait, func() bool { return len(s.GitHub.Dispatches(repo)) == 1 })
	q, _ := json.Marshal(map[string]string{"user": "bob", "reason": reason})
	if code, body := s.Do("POST", "/api/v1/rollouts/"+url.PathEscape(s.id)+"/abort", "application/json", q); code != http.StatusOK {
		t.Fatalf("abort answered %d %s", code, body)
	}
	s.WaitFor("the rollout to fail", wait, func() bool { return s.status().Rollout.Status == rolloutflow.Failed })

	const gate = "aborted by @bob: " + reason
	got := s.status()
	if g := got.Rollout.Stages[0].Gate; g != gate {
		t.Errorf("the API's stage gate is %q, want the abort exact: %q", g, gate)
	}
	var cr struct{ Summary, Title string }
	s.WaitFor("the failed check run", wait, func() bool {
		c, ok := s.check()
		cr.Summary, cr.Title = c.Summary, c.Title
		return ok && c.Conclusion == "failure"
	})
	if !strings.Contains(cr.Summary, "| "+mdtext.CodeSpan(gate)+" |") {
		t.Errorf("the check run does not show the abort as inline code in its stage's row:\n%s", cr.Summary)
	}
	for _, active := range []string{"@someone", "evil.example/rb", "evil.example/x"} {
		if n := strings.Count(cr.Summary, active); n != 1 || strings.Contains(cr.Title, active) {
			t.Errorf("%q shows %d times in the check run's summary, want once, in the code span:\n%s\n%s", active, n, cr.Title, cr.Summary)
		}
	}
}
