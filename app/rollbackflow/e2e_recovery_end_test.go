package rollbackflow_test

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// recoveryRollback is the scene of TestRecoveryRollsBackByPullRequest up to
// the rollback release with its pull request, and that release's id.
func recoveryRollback(t *testing.T, dbURL string) (*scene, string) {
	s := newScene(t, dbURL)
	s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", repoConfig+"recovery:\n  max_retries: 0\n")
	s.Deliver("workflow_run", s.WorkflowRun(e2etest.Run{Repository: appRepo, ID: 7003, Attempt: 1,
		Conclusion: "failure", HeadSHA: sha(3)}))
	s.WaitFor("the rollback release", wait, func() bool {
		return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback' AND pr_number > 0`) == 1
	})
	id := s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`)
	if st := s.String(`SELECT state FROM episodes WHERE run_id = 7003`); st != "rolling_back" {
		t.Fatalf("episode state %q before the rollback ends, want rolling_back", st)
	}
	return s, id
}

// The recovery episode of a pull-request rollback ends when the rollback
// release does: rolled_back (with rollback_completed) when it becomes
// healthy; alerted (rollback_failed, manual_intervention_required and the
// alert issue) when it fails or its pull request is closed without merging.
func TestRecoveryEpisodeEndsWithItsPullRequestRollback(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, state, event string
		check              string // the ripcord/recovery check run's title
		end                func(s *scene, id string)
	}{
		{"healthy", "rolled_back", "rollback_completed", "Rolled back to ", func(s *scene, id string) {
			s.fact(7100, "success", id, image(2), sha(2))
		}},
		{"failed", "alerted", "rollback_failed", "Manual intervention required", func(s *scene, id string) {
			s.fact(7100, "failed", id, image(2), sha(2))
		}},
		{"pull request closed", "alerted", "rollback_failed", "Manual intervention required", func(s *scene, id string) {
			rec := s.waitRelease(id)
			s.closePullRequest(rec.PRNumber)
			s.Deliver("pull_request", s.closedEvent(rec))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				s, id := recoveryRollback(t, dbURL)
				c.end(s, id)
				s.WaitFor("the episode to end "+c.state, wait, func() bool {
					return s.String(`SELECT state FROM episodes WHERE run_id = 7003`) == c.state
				})
				if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = $1 AND release_id = 'r3:prod-eu/prod'`, c.event); n != 1 {
					t.Errorf("%s events of r3 = %d, want 1", c.event, n)
				}
				s.Settle("recovery_check", "recovery_alert")
				var title string
				for _, cr := range s.GitHub.CheckRuns(appRepo) {
					if cr.Name == "ripcord/recovery" {
						title = cr.Title
					}
				}
				if !strings.HasPrefix(title, c.check) {
					t.Errorf("ripcord/recovery check run %q, want %q…", title, c.check)
				}
				issues := 0
				for _, is := range s.GitHub.Issues(appRepo) {
					if strings.Contains(is.Title, "manual intervention required") {
						issues++
					}
				}
				if want := map[bool]int{true: 1, false: 0}[c.state == "alerted"]; issues != want {
					t.Errorf("alert issues = %d, want %d", issues, want)
				}
			})
		})
	}
}
