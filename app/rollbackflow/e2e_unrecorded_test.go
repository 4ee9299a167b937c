package rollbackflow_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// failRollbackInitiated makes every transaction that records a rollback
// as initiated (the one that stores the rollback's release) fail, as a
// conflict on every attempt would.
func failRollbackInitiated(t testing.TB, db *store.DB) {
	t.Helper()
	stmts := []string{`CREATE TRIGGER fail_rollback_initiated BEFORE INSERT ON audit_events
		WHEN NEW.type = 'rollback_initiated' BEGIN SELECT RAISE(ABORT, 'injected conflict'); END`}
	if db.Dialect == store.Postgres {
		stmts = []string{`CREATE FUNCTION fail_rollback_initiated() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF NEW.type = 'rollback_initiated' THEN RAISE EXCEPTION 'injected conflict'; END IF;
				RETURN NEW;
			END $$`,
			`CREATE TRIGGER fail_rollback_initiated BEFORE INSERT ON audit_events
				FOR EACH ROW EXECUTE FUNCTION fail_rollback_initiated()`}
	}
	for _, s := range stmts {
		if _, err := db.Write.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
}

// A pull request opened on every attempt whose release can never be
// stored is not dropped unheard when the attempts run out: the person who
// asked is told the pull request was opened but not recorded, with its
// link, and the release rolled back gets rollback_failed (which also ends
// a recovery episode waiting for the rollback).
func TestRollbackWhoseReleaseCannotBeStoredIsAnsweredWhenTheLastAttemptFails(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		db := testdb.Open(t, dbURL)
		failRollbackInitiated(t, db)
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")

		id := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
		s.lastAttemptIsTheSecond(db)
		s.WaitFor("the answer that the pull request was not recorded", wait, func() bool { return len(s.replies(id)) == 2 })
		prs := s.GitHub.PullRequests(gitops)
		if len(prs) != 1 {
			t.Fatalf("pull requests on %s = %d, want the one opened", gitops, len(prs))
		}
		link := fmt.Sprintf("%s/pull/%d", gitops, prs[0].Number)
		if got := s.replies(id)[1]; !strings.Contains(got, "was opened but could not be recorded") ||
			!strings.Contains(got, link) || !strings.Contains(got, "injected conflict") {
			t.Errorf("second reply = %q, want it to say the pull request %s was opened but not recorded, and why", got, link)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'rollback_failed' AND release_id = 'r3:prod-eu/prod'`); n != 1 {
			t.Errorf("rollback_failed events on r3 = %d, want 1", n)
		}
		// The outcome a waiting recovery episode ends on.
		if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'recovery_rollback_outcome'
			AND CAST(args AS TEXT) LIKE '%was opened but could not be recorded%'`); n != 1 {
			t.Errorf("recovery rollback outcomes saying the pull request was not recorded = %d, want 1", n)
		}
	})
}

// passRollbackInitiated drops failRollbackInitiated's trigger: the
// release store works again.
func passRollbackInitiated(t testing.TB, db *store.DB) {
	t.Helper()
	stmts := []string{`DROP TRIGGER fail_rollback_initiated`}
	if db.Dialect == store.Postgres {
		stmts = []string{`DROP TRIGGER fail_rollback_initiated ON audit_events`, `DROP FUNCTION fail_rollback_initiated()`}
	}
	for _, s := range stmts {
		if _, err := db.Write.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
}

// A rollback's pull request is opened on GitHub but its release cannot be
// stored (the store fails after the pull request exists). Until the job's
// retry stores it, the job holds the environment's one rollback: another
// target is refused as being opened. The retry finds the pull request by
// its branch and adopts it: no second pull request, no push over its
// branch, and the release stored points at it, which then holds the
// environment (another target is refused naming that pull request).
func TestRollbackWhoseReleaseWasNotStoredIsAdoptedByTheRetry(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		// Retries come soon (the tenth after about a minute, well after the
		// store works again), so the test need not wait for the default's.
		s := newSceneWith(t, dbURL, app.Options{RetryBase: 100 * time.Millisecond})
		db := testdb.Open(t, dbURL)
		failRollbackInitiated(t, db)
		post := func(to string) (int, string) {
			status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
				[]byte(`{"app":"checkout","environment":"prod","to":"`+to+`","reason":"r3 leaks memory"}`))
			return status, string(out)
		}
		status, out := post("r2:prod-eu/prod")
		if status != 202 {
			t.Fatalf("POST /api/v1/rollbacks = %d %s", status, out)
		}
		s.WaitFor("the pull request opened and its job retrying", wait, func() bool {
			return len(s.GitHub.PullRequests(gitops)) == 1 && s.Int(`SELECT COUNT(*) FROM river_job
				WHERE kind = 'rollback_pull_request' AND attempt >= 2 AND state IN ('available', 'retryable', 'running')`) == 1
		})
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`); n != 0 {
			t.Fatalf("rollback releases stored = %d, want none yet", n)
		}
		if status, out := post("r1:prod-eu/prod"); status != 409 || !strings.Contains(out, "being opened") {
			t.Errorf("another target while the first is not stored = %d %s, want 409: it is being opened", status, out)
		}

		passRollbackInitiated(t, db)
		s.WaitFor("the rollback release stored", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback' AND pr_number > 0`) == 1
		})
		s.Settle(jobKinds...)
		rec := s.waitRelease(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))
		prs := s.GitHub.PullRequests(gitops)
		if len(prs) != 1 || prs[0].State != "open" || rec.PRNumber != prs[0].Number ||
			!strings.HasSuffix(rec.PRURL, fmt.Sprintf("%s/pull/%d", gitops, prs[0].Number)) {
			t.Fatalf("pull requests = %+v and release %+v, want the one pull request, recorded", prs, rec)
		}
		if n := s.GitHub.Count("POST", "/repos/{owner}/{repo}/pulls"); n != 1 {
			t.Errorf("pull requests created = %d, want 1", n)
		}
		if n := s.GitHub.Count("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}"); n != 0 {
			t.Errorf("branch moves = %d, want none: the retry adopts the branch as it is", n)
		}
		if status, out := post("r1:prod-eu/prod"); status != 409 || !strings.Contains(out, rec.PRURL) {
			t.Errorf("another target after the retry = %d %s, want 409 naming %s", status, out, rec.PRURL)
		}
	})
}

// giveUpUnrecorded asks for a rollback to r2 whose release can never be
// stored, and lets its job give up at its last attempt with the pull
// request open: it returns that pull request.
func (s *scene) giveUpUnrecorded(db *store.DB) githubtest.PullRequest {
	s.T.Helper()
	failRollbackInitiated(s.T, db)
	if status, out := s.postRollbackTo("r2:prod-eu/prod"); status != 202 {
		s.T.Fatalf("POST /api/v1/rollbacks = %d %s", status, out)
	}
	s.lastAttemptIsTheSecond(db)
	s.WaitFor("the job to give up", wait, func() bool {
		return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request' AND state = 'cancelled'`) == 1
	})
	passRollbackInitiated(s.T, db)
	prs := s.GitHub.PullRequests(gitops)
	if len(prs) != 1 || prs[0].State != "open" || s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback'`) != 0 {
		s.T.Fatalf("pull requests = %+v, want one open whose release is not stored", prs)
	}
	return prs[0]
}

// A rollback's job gives up at its last attempt with its pull request open
// on GitHub but its release not stored. No record says that pull request
// is open, yet merging it deploys its rollback: it holds the environment's
// one rollback pull request, and a rollback to another target is refused
// naming it rather than opened beside it. Once it is closed, whether
// ripcord hears of it (the webhook) or not (GitHub is asked), the other
// rollback is opened.
func TestRollbackPullRequestWhoseJobGaveUpHoldsItsEnvironment(t *testing.T) {
	t.Parallel()
	for _, heard := range []bool{true, false} {
		name := "close heard"
		if !heard {
			name = "close missed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				s := newScene(t, dbURL)
				pr := s.giveUpUnrecorded(testdb.Open(t, dbURL))
				link := fmt.Sprintf("https://github.com/%s/pull/%d", gitops, pr.Number)
				if status, out := s.postRollbackTo("r1:prod-eu/prod"); status != 409 || !strings.Contains(out, link) {
					t.Fatalf("rollback to r1 with %s open = %d %s, want 409 naming it", link, status, out)
				}
				s.Settle(jobKinds...)
				if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
					t.Errorf("pull requests in %s = %d, want the unrecorded one only", gitops, n)
				}

				s.closePullRequest(pr.Number)
				if heard {
					s.Deliver("pull_request", s.closedEvent(records.Record{PRNumber: pr.Number, PRURL: link}))
					s.Settle(jobKinds...)
				}
				if status, out := s.postRollbackTo("r1:prod-eu/prod"); status != 202 {
					t.Fatalf("rollback to r1 with %s closed = %d %s, want 202", link, status, out)
				}
				s.WaitFor("the rollback to r1 with its pull request", wait, func() bool {
					return s.Int(`SELECT COUNT(*) FROM records WHERE kind = 'rollback' AND state = 'opened' AND pr_number > 0`) == 1
				})
				s.Settle(jobKinds...)
			})
		})
	}
}
