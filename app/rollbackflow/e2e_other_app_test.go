package rollbackflow_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

const paymentsConfig = `  payments:
    environments:
      prod:
        cluster: prod-eu
        workflows: [deploy.yml]
        rollback:
          mode: pull-request
          repository: acme/gitops
          base: main
          file: apps/payments/prod/release.yaml
          fields: {image: image.ref, digest: image.digest, release_id: release.id}
`

// withPayments adds payments, a second app of the monorepo checkout is in,
// built from the same commits and deployed to the same environment of the
// same GitOps repository: p1 and p2 healthy, p3 failed.
func (s *scene) withPayments() {
	s.T.Helper()
	s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", repoConfig+paymentsConfig)
	s.GitHub.PutFile(gitops, "main", "apps/payments/prod/release.yaml",
		strings.ReplaceAll(strings.ReplaceAll(releaseYAML, "checkout", "payments"), "r3:", "p3:"))
	s.threeReleases("payments", "p", 8000)
}

// payments is rolled back to p2, built from the same commit as r2: its
// pull request is open on release-rollback-prod-<sha8>, and a person
// pushed commits on top of ripcord's rollback commit there. A rollback of
// checkout to r2 meets that branch (its name does not name the app). It
// must not force-move it, which would turn payments' open pull request
// into checkout's and throw the person's commits away: it is not opened,
// and the answer names payments' pull request. So it is when the person
// pushed more commits than ripcord reads looking for the rollback commit
// (20): ripcord cannot tell whose rollback the branch holds, and leaves it.
func TestRollbackDoesNotTakeOverAnotherAppsRollbackWithCommitsMadeByHand(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		hand int
		says string // what the answer says of the branch
	}{
		{1, "another app"},
		{21, "cannot tell whose rollback"},
	} {
		t.Run(fmt.Sprintf("%d commits", tt.hand), func(t *testing.T) {
			t.Parallel()
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				s := newScene(t, dbURL)
				s.withPayments()
				status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
					[]byte(`{"app":"payments","environment":"prod","to":"p2:prod-eu/prod","reason":"p3 leaks memory"}`))
				if status != 202 {
					t.Fatalf("rollback of payments = %d %s", status, out)
				}
				s.WaitFor("payments' rollback pull request", wait, func() bool {
					return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback' AND app = 'payments' AND pr_number > 0`) == 1
				})
				s.Settle(jobKinds...)
				prs := s.GitHub.PullRequests(gitops)
				if len(prs) != 1 {
					t.Fatalf("pull requests = %+v, want payments' one", prs)
				}
				payments := prs[0]
				link := fmt.Sprintf("https://github.com/%s/pull/%d", gitops, payments.Number)
				var head string
				for i := range tt.hand {
					head = s.GitHub.PutFile(gitops, payments.Head, "apps/payments/prod/NOTES.md", fmt.Sprintf("replicas pinned by hand (%d)\n", i))
				}

				if status, out := s.postRollbackTo("r2:prod-eu/prod"); status != 202 {
					t.Fatalf("rollback of checkout to r2 = %d %s", status, out)
				}
				s.WaitFor("checkout's rollback to fail", wait, func() bool {
					return s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = 'r3:prod-eu/prod'`) == 1
				})
				s.Settle(jobKinds...)
				if got, _ := s.GitHub.Ref(gitops, "heads/"+payments.Head); got != head {
					t.Errorf("branch %s = %s, want %s: payments' rollback and the commits made by hand must stay", payments.Head, got, head)
				}
				if got := s.pullRequest(payments.Number); got.Title != payments.Title || got.Body != payments.Body || got.State != "open" {
					t.Errorf("payments' pull request = %+v, want it left as it was: %+v", got, payments)
				}
				if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
					t.Errorf("pull requests = %d, want payments' one only", n)
				}
				if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = 'r3:prod-eu/prod'
					AND message LIKE '%' || $1 || '%' AND message LIKE '%' || $2 || '%'`, link, tt.says); n != 1 {
					t.Errorf("rollback_failed events on r3 naming payments' pull request %s and saying %q = %d, want 1", link, tt.says, n)
				}
			})
		})
	}
}

// payments and checkout are rolled back to releases of one commit at the
// same moment: their rollbacks share a branch name. While payments' job
// has created the branch and GitHub has not yet answered its pull request,
// checkout's job must not take the branch over as stale, which left both
// records naming one pull request that rolled back payments alone. It
// waits for the branch, then finds payments' pull request on it.
func TestRollbacksOfTwoAppsToOneCommitAtOnceKeepTheirOwnPullRequests(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.withPayments()
		reached, release := s.GitHub.HoldFirst("POST /repos/{owner}/{repo}/pulls")
		status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
			[]byte(`{"app":"payments","environment":"prod","to":"p2:prod-eu/prod","reason":"p3 leaks memory"}`))
		if status != 202 {
			t.Fatalf("rollback of payments = %d %s", status, out)
		}
		select {
		case <-reached:
		case <-time.After(wait):
			t.Fatal("payments' rollback never asked for its pull request")
		}
		if status, out := s.postRollbackTo("r2:prod-eu/prod"); status != 202 {
			t.Fatalf("rollback of checkout to r2 = %d %s", status, out)
		}
		// checkout's job has run while payments' pull request is held:
		// it waits (a snooze, which River counts in the job's metadata),
		// or it moved the branch (what it must not).
		snoozes := `json_extract(metadata, '$.snoozes')`
		if strings.HasPrefix(dbURL, "postgres") {
			snoozes = `(metadata->>'snoozes')::int`
		}
		s.WaitFor("checkout's rollback job to meet the branch", wait, func() bool {
			return s.GitHub.Count("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}") > 0 ||
				s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request' AND `+snoozes+` > 0`) > 0
		})
		release()
		s.WaitFor("both rollbacks to be answered", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback' AND app = 'payments' AND pr_number > 0`) == 1 &&
				(s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback' AND app = 'checkout' AND pr_number > 0`) == 1 ||
					s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = 'r3:prod-eu/prod'`) == 1)
		})
		s.Settle(jobKinds...)
		if n := s.Int(`SELECT COUNT(*) FROM (SELECT pr_number FROM records WHERE kind = 'rollback' AND pr_number > 0
			GROUP BY pr_number HAVING COUNT(*) > 1) shared`); n != 0 {
			t.Errorf("%d pull requests named by two rollback records, want none", n)
		}
		n := s.Int(`SELECT pr_number FROM records WHERE kind = 'rollback' AND app = 'payments'`)
		pr := s.pullRequest(n)
		if !strings.Contains(pr.Title, "payments") {
			t.Errorf("payments' pull request #%d is titled %q", n, pr.Title)
		}
		if got, ok := s.GitHub.FileAt(gitops, pr.Head, "apps/payments/prod/release.yaml"); !ok || !strings.Contains(got, digest(2)) {
			t.Errorf("payments' pull request #%d does not roll payments back to p2:\n%s", n, got)
		}
	})
}
