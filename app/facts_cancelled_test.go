package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A workflow whose deploy job was cancelled posts status cancelled: the
// release is called off (aborted) rather than left progressing for ever,
// the audit trail names the run and attempt that stopped it and writes no
// failure, and a re-run's facts move it on, on both databases.
func TestACancelledTaskFactAbortsTheReleaseUntilARerun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer := factServer(t, dbURL, nil)
		token := issuer.Token(t, nil)
		at := time.Now().UTC()
		fact := func(attempt int, status string, m int) map[string]any {
			return map[string]any{"source": "task", "repository": "acme/checkout", "workflow_run_id": 42, "run_attempt": attempt,
				"status": status, "app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v1",
				"release_id": "r-cancel", "observed_at": at.Add(time.Duration(m) * time.Second).Format(time.RFC3339),
				"metadata": map[string]string{"actor": "octocat", "job": "deploy"}}
		}
		for _, step := range []struct {
			attempt      int
			status, want string
			m            int
		}{
			{1, "in_progress", "progressing", 0},
			{1, "cancelled", "aborted", 5},
			{2, "in_progress", "progressing", 10},
			{2, "success", "healthy", 15},
		} {
			var res struct{ Outcome, State, Error string }
			if code := ts.post(t, "/api/v1/facts", token, fact(step.attempt, step.status, step.m), &res); code != http.StatusOK || res.State != step.want {
				t.Fatalf("attempt %d %s: HTTP %d %+v, want 200 and the release %s", step.attempt, step.status, code, res, step.want)
			}
			if step.status != "cancelled" {
				continue
			}
			var audit struct {
				Events []struct {
					Type, Message string
					Data          map[string]any
				}
			}
			if code := ts.api(t, "/api/v1/audit?release_id=r-cancel", &audit); code != http.StatusOK {
				t.Fatalf("audit: HTTP %d", code)
			}
			var said bool
			for _, e := range audit.Events {
				if e.Type == "failure_detected" {
					t.Errorf("a cancelled deploy wrote a failure: %s", e.Message)
				}
				if e.Type == "state_changed" && e.Data["to"] == "aborted" {
					said = strings.Contains(e.Message, "run 42 attempt 1 of acme/checkout") && strings.Contains(e.Message, "actor octocat") &&
						e.Data["workflow_run_id"] == float64(42) && e.Data["run_attempt"] == float64(1)
					if !said {
						t.Errorf("state_changed to aborted does not name the run, attempt and actor: %q %v", e.Message, e.Data)
					}
				}
			}
			if !said {
				t.Errorf("no state_changed to aborted in %+v", audit.Events)
			}
		}
	})
}
