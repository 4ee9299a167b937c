package rollbackflow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// The Roll back button answers in the check run it was clicked on:
// "Opening the pull request …; I will post the link here." The link must
// come there once the job has opened the pull request, as the command's
// reply comes in its conversation.
func TestRollBackButtonPostsThePullRequestLinkInTheCheckRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		failed, rec := s.clickRollBack()
		if cr, _ := s.releaseCheck(failed); !strings.Contains(cr.Summary, rec.PRURL) {
			t.Errorf("r3's check run after the pull request opened does not link it (%s):\n%s", rec.PRURL, cr.Summary)
		}
	})
}

// A click whose pull request cannot be opened (the release file lacks a
// configured field) is told so in the check run it was clicked on,
// instead of "I will post the link here" staying there for ever.
func TestRollBackButtonWhosePullRequestCannotBeOpenedSaysSo(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(gitops, "main", releaseFile, strings.Replace(releaseYAML, "  ref: ghcr.io/acme/checkout:v3\n", "", 1))
		failed := s.clickR3()
		s.WaitFor("the rollback_failed audit event", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = $1`, failed) == 1
		})
		s.Settle(append(jobKinds, "release_check")...)
		if cr, _ := s.releaseCheck(failed); !strings.Contains(cr.Summary, "The rollback pull request was not opened") ||
			!strings.Contains(cr.Summary, "image.ref") {
			t.Errorf("r3's check run does not say the pull request was not opened, and why:\n%s", cr.Summary)
		}
	})
}

// Each answer to a click is shown by a job of its own, and jobs run in any
// order and are retried: the job of the first answer ("I will post the
// link here") run again after the one of the pull request's link must not
// put the older text back over the link.
func TestAClickAnswersJobRunLateKeepsThePullRequestLink(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		failed, rec := s.clickRollBack()
		if cr, _ := s.releaseCheck(failed); !strings.Contains(cr.Summary, rec.PRURL) {
			t.Fatalf("r3's check run does not link the pull request (%s):\n%s", rec.PRURL, cr.Summary)
		}

		first, attempts := firstNoteJob(t, s, dbURL, failed)
		s.Exec(`UPDATE river_job SET state = 'available', finalized_at = NULL WHERE id = $1`, first)
		s.WaitFor("the first answer's job to run again", wait, func() bool {
			return s.Int(`SELECT attempt FROM river_job WHERE id = $1`, first) > attempts &&
				s.Int(`SELECT COUNT(*) FROM river_job WHERE id = $1 AND state = 'completed'`, first) == 1
		})
		if cr, _ := s.releaseCheck(failed); !strings.Contains(cr.Summary, rec.PRURL) {
			t.Errorf("after the first answer's job ran again, r3's check run no longer links the pull request (%s):\n%s", rec.PRURL, cr.Summary)
		}
	})
}

// firstNoteJob is the id and attempts of the first release_check job that
// carried an answer to a click on releaseID's check run.
func firstNoteJob(t *testing.T, s *scene, dbURL, releaseID string) (id int64, attempts int) {
	t.Helper()
	args := "json(args)" // River keeps SQLite's args as JSONB
	if strings.HasPrefix(dbURL, "postgres") {
		args = "args::text"
	}
	rows, err := s.DB().Query(`SELECT id, attempt, ` + args + ` FROM river_job WHERE kind = 'release_check' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var raw []byte
		var a rollbackflow.ReleaseCheckArgs
		if err := rows.Scan(&id, &attempts, &raw); err != nil {
			t.Fatal(err)
		}
		if json.Unmarshal(raw, &a) == nil && a.ReleaseID == releaseID && a.Note != "" {
			return id, attempts
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no release_check job answered the click on %s", releaseID)
	return 0, 0
}

// clickR3 has octocat (who may write) click r3's Roll back button once its
// check run shows it, and returns r3's id.
func (s *scene) clickR3() string {
	s.T.Helper()
	s.GitHub.SetPermission(appRepo, "octocat", "write")
	failed := "r3:prod-eu/prod"
	s.WaitFor("r3's check run with its button", wait, func() bool {
		cr, ok := s.releaseCheck(failed)
		return ok && cr.Status == "completed" && len(cr.Actions) == 1
	})
	s.click(failed, "octocat")
	return failed
}

// clickRollBack has octocat (who may write) click r3's Roll back button and
// waits until the rollback release is recorded and every job has run. It
// returns r3's id and the rollback release.
func (s *scene) clickRollBack() (string, records.Record) {
	s.T.Helper()
	failed := s.clickR3()
	s.WaitFor("the rollback release", wait, func() bool {
		return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`) == 1
	})
	rec := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))
	s.Settle(append(jobKinds, "release_check")...)
	return failed, rec
}
