package rollbackflow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// reopenedEvent is GitHub's pull_request reopened delivery for rec's pull
// request in the GitOps repository.
func (s *scene) reopenedEvent(rec records.Record) []byte {
	return e2etest.Edit(s.T, githubtest.LoadPayload(s.T, "pull_request", "reopened.payload.json"), func(m map[string]any) {
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		m["number"] = rec.PRNumber
		pr := m["pull_request"].(map[string]any)
		pr["number"], pr["merged"], pr["html_url"], pr["state"] = rec.PRNumber, false, rec.PRURL, "open"
		r := m["repository"].(map[string]any)
		r["full_name"], r["name"] = gitops, "gitops"
	})
}

// withdrawnAndRetried asks for a rollback, closes its pull request without
// merging (which withdraws it) and asks again: old is the withdrawn
// rollback, newer the rollback of the same release opened after it.
func (s *scene) withdrawnAndRetried() (old, newer records.Record) {
	s.T.Helper()
	pr, old := s.rollbackByComment()
	s.closePullRequest(old.PRNumber)
	s.Deliver("pull_request", s.closedEvent(old))
	s.WaitFor("the closed rollback's release to end", wait, func() bool {
		r, _ := s.release(old.ReleaseID)
		return r.State == records.StateAborted
	})
	again := s.comment(pr, "octocat", "/ripcord rollback still failing", false)
	s.WaitFor("the newer rollback's pull request", wait, func() bool { return len(s.replies(again)) == 2 })
	s.Settle(jobKinds...)
	newer = s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback' AND state = 'opened'`))
	if newer.ReleaseID == old.ReleaseID || newer.PRNumber == old.PRNumber {
		s.T.Fatalf("newer rollback = %+v, want another release and pull request than %s", newer, old.ReleaseID)
	}
	return old, newer
}

// A rollback pull request closed without merging, after which ripcord
// opened a newer rollback of the same release, is reopened: merging both
// would put two rollbacks of one release in flight. The withdrawn release
// is not revived; the reopened pull request is told which pull request
// supersedes it, and the withdrawn release's audit trail says so.
func TestReopenedWithdrawnRollbackNamesTheNewerOne(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		old, newer := s.withdrawnAndRetried()

		s.reopenPullRequest(old.PRNumber)
		s.Deliver("pull_request", s.reopenedEvent(old))
		s.Settle(jobKinds...)
		var got []string
		for _, c := range s.GitHub.Comments(gitops) {
			if c.User == githubtest.BotLogin && c.Issue == old.PRNumber {
				got = append(got, c.Body)
			}
		}
		if len(got) != 1 || !strings.Contains(got[0], newer.PRURL) || !strings.Contains(got[0], newer.ReleaseID) {
			t.Errorf("ripcord's comments on the reopened #%d = %q, want one naming %s (release %s)", old.PRNumber, got,
				newer.PRURL, newer.ReleaseID)
		}
		if r, _ := s.release(old.ReleaseID); !r.Withdrawn() {
			t.Errorf("reopened rollback %s is %s, want it still withdrawn", old.ReleaseID, r.State)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND message LIKE '%reopened%'
			AND message LIKE '%'||$2||'%'`, old.ReleaseID, newer.ReleaseID); n != 1 {
			t.Errorf("audit events of %s saying it was reopened with %s open = %d, want 1", old.ReleaseID, newer.ReleaseID, n)
		}
	})
}

// The reopened pull request of a withdrawn rollback is merged anyway while
// a newer rollback of the same release is still open: ripcord says so in
// the withdrawn release's audit trail (its release file is merged, so it is
// what will run) and on the newer pull request, whose merge would deploy a
// second rollback of the same release.
func TestMergedWithdrawnRollbackWarnsOnTheNewerOne(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		old, newer := s.withdrawnAndRetried()

		s.Deliver("pull_request", s.mergedEvent(old, time.Now().UTC().Truncate(time.Second)))
		s.Settle(jobKinds...)
		var got []string
		for _, c := range s.GitHub.Comments(gitops) {
			if c.User == githubtest.BotLogin && c.Issue == newer.PRNumber {
				got = append(got, c.Body)
			}
		}
		if len(got) != 1 || !strings.Contains(got[0], old.PRURL) || !strings.Contains(got[0], old.ReleaseID) {
			t.Errorf("ripcord's comments on the newer #%d = %q, want one naming the merged %s (release %s)", newer.PRNumber, got,
				old.PRURL, old.ReleaseID)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND message LIKE '%merged%'
			AND message LIKE '%'||$2||'%'`, old.ReleaseID, newer.ReleaseID); n != 1 {
			t.Errorf("audit events of %s saying it was merged with %s open = %d, want 1", old.ReleaseID, newer.ReleaseID, n)
		}
	})
}
