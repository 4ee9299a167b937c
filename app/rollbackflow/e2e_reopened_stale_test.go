package rollbackflow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

// reopenedSuperseded is a withdrawn rollback superseded by r4, a newer
// release that turned healthy, then reopened: ripcord has said on it that
// it is stale.
func (s *scene) reopenedSuperseded() records.Record {
	old := s.withdrawn()
	s.fact(7004, "success", "r4:prod-eu/prod", image(4), sha(4))
	s.WaitFor("the withdrawn rollback superseded by r4", wait, func() bool {
		r, _ := s.release(old.ReleaseID)
		return r.State == records.StateSuperseded
	})
	s.reopenPullRequest(old.PRNumber)
	s.Deliver("pull_request", s.reopenedEvent(old))
	s.wantStaleComment(old.PRNumber, old.Image, "r4:prod-eu/prod")
	return old
}

// wantStaleComment checks ripcord's one comment on the reopened pull
// request number: stale, naming what merging deploys (deploys), what runs
// now (running), and asking for a new rollback.
func (s *scene) wantStaleComment(number int, deploys, running string) {
	s.T.Helper()
	s.WaitFor("ripcord's comment on the reopened pull request", wait, func() bool { return len(s.botComments(number)) > 0 })
	s.Settle(jobKinds...)
	got := s.botComments(number)
	if len(got) != 1 || !strings.Contains(got[0], "stale") || !strings.Contains(got[0], deploys) ||
		!strings.Contains(got[0], running) || !strings.Contains(got[0], "/ripcord rollback") {
		s.T.Errorf("ripcord's comments on the reopened #%d = %q, want one saying it is stale, that merging deploys %s "+
			"over %s, and to ask for a new rollback", number, got, deploys, running)
	}
	for _, pr := range s.GitHub.PullRequests(gitops) {
		if pr.Number == number && pr.State != "open" {
			s.T.Errorf("reopened #%d is %s, want it left open: a person reopened it", number, pr.State)
		}
	}
}

// A rollback pull request closed without merging (its release withdrawn)
// is reopened after a newer release, r4, ran: its withdrawn release is
// superseded, so merging it would deploy r2's image over r4. ripcord says
// so on the reopened pull request, with what runs now, asks for a new
// rollback instead, writes it to the release's audit trail, and closes
// nothing. The stale pull request does not hold the environment: the new
// rollback asked for is opened.
func TestReopenedSupersededRollbackSaysItIsStale(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		old := s.reopenedSuperseded()
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND type = 'manual_intervention_required'
			AND message LIKE '%stale%' AND message LIKE '%r4:prod-eu/prod%'`, old.ReleaseID); n != 1 {
			t.Errorf("audit events of %s saying it is stale over r4 = %d, want 1", old.ReleaseID, n)
		}
		if status, out := s.postRollbackTo("r1:prod-eu/prod"); status != 202 {
			t.Errorf("the new rollback asked for = %d %s, want 202: the stale pull request holds nothing", status, out)
		}
		s.Settle(jobKinds...)
	})
}

// reopenedEventOf is GitHub's pull_request reopened delivery for pr of the
// GitOps repository, as GitHub sends it: its branch, head commit and title,
// and its base, main, at main's head.
func (s *scene) reopenedEventOf(pr githubtest.PullRequest) []byte {
	head, ok := s.GitHub.Ref(gitops, "heads/"+pr.Head)
	if !ok {
		s.T.Fatalf("branch %s of #%d not found", pr.Head, pr.Number)
	}
	base, ok := s.GitHub.Ref(gitops, "heads/main")
	if !ok {
		s.T.Fatalf("branch main of %s not found", gitops)
	}
	return e2etest.Edit(s.T, s.reopenedEvent(records.Record{PRNumber: pr.Number,
		PRURL: fmt.Sprintf("https://github.com/%s/pull/%d", gitops, pr.Number)}), func(m map[string]any) {
		p := m["pull_request"].(map[string]any)
		p["title"] = pr.Title
		h := p["head"].(map[string]any)
		h["ref"], h["sha"] = pr.Head, head
		h["repo"].(map[string]any)["full_name"] = gitops
		b := p["base"].(map[string]any)
		b["ref"], b["sha"] = "main", base
	})
}

// reopenedWithoutReleaseIsStale gives up on a rollback to r2 after its job
// opened the pull request (no release of it is stored), lets change alter
// that pull request as a person may while it is open (nil: nothing), closes
// it, runs r4 and reopens it. ripcord must say on it that it is stale and
// would deploy r2's revision over r4, write that to the audit trail of r3,
// the release it rolled back, and no longer hold the environment for it:
// the close was missed, so it held it until now, and a new rollback asked
// for is opened.
func (s *scene) reopenedWithoutReleaseIsStale(db *store.DB, change func(pr *githubtest.PullRequest)) {
	s.T.Helper()
	pr := s.giveUpUnrecorded(db)
	if change != nil {
		change(&pr)
	}
	s.closePullRequest(pr.Number)
	s.fact(7004, "success", "r4:prod-eu/prod", image(4), sha(4))

	s.reopenPullRequest(pr.Number)
	s.Deliver("pull_request", s.reopenedEventOf(pr))
	s.wantStaleComment(pr.Number, rollbackpr.ShortSHA(sha(2)), "r4:prod-eu/prod")
	if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = 'r3:prod-eu/prod'
		AND type = 'manual_intervention_required' AND message LIKE '%stale%' AND message LIKE '%r4:prod-eu/prod%'`); n != 1 {
		s.T.Errorf("audit events of r3 saying its rollback's pull request is stale over r4 = %d, want 1", n)
	}
	if status, out := s.postRollbackTo("r1:prod-eu/prod"); status != 202 {
		s.T.Errorf("the new rollback asked for = %d %s, want 202: the stale pull request holds nothing", status, out)
	}
	s.Settle(jobKinds...)
}

// A rollback pull request whose job gave up after opening it (its release
// could never be stored) has no release: ripcord knows it only by what it
// wrote into it. Closed, and reopened after a newer release, r4, ran, it
// would deploy r2 over r4: ripcord says so on it as for a superseded
// rollback, and writes it to the audit trail of r3, the release it rolled
// back. The close was missed, and the pull request held the environment
// until then (its job gave up): stale, it holds it no more, and the new
// rollback asked for is opened.
func TestReopenedRollbackWithoutReleaseSaysItIsStale(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.reopenedWithoutReleaseIsStale(testdb.Open(t, dbURL), nil)
	})
}

// As TestReopenedRollbackWithoutReleaseSaysItIsStale, with a commit a
// person pushed on top of ripcord's rollback commit before the pull
// request was closed: its head commit is theirs and carries no trailers,
// but ripcord's rollback commit under it still says what merging deploys,
// as Open finds it. Reopened after r4 ran, the pull request is stale and
// ripcord says so.
func TestReopenedRollbackWithoutReleaseWithCommitsMadeByHandSaysItIsStale(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.reopenedWithoutReleaseIsStale(testdb.Open(t, dbURL), func(pr *githubtest.PullRequest) {
			s.GitHub.PutFile(gitops, pr.Head, "apps/checkout/prod/NOTES.md", "replicas pinned by hand\n")
		})
	})
}

// As TestReopenedRollbackWithoutReleaseSaysItIsStale, with the pull
// request's title edited by a person while it was open: it no longer ends
// with the target's revision. What merging deploys is read from what
// ripcord wrote and nobody edits, its branch name, not from the title.
func TestReopenedRollbackWithoutReleaseWithAnEditedTitleNamesItsTarget(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.reopenedWithoutReleaseIsStale(testdb.Open(t, dbURL), func(pr *githubtest.PullRequest) {
			pr.Title += " (hold until the incident review)"
		})
	})
}
