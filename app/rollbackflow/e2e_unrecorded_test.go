package rollbackflow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// failRollbackInitiated makes every transaction that records a rollback
// as initiated (the one that stores the rollback's release) fail, as a
// conflict on every attempt would.
func failRollbackInitiated(t *testing.T, db *store.DB) {
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
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s := newScene(t, dbURL)
		db := testdb.Open(t, dbURL)
		failRollbackInitiated(t, db)
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")

		id := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
		// Make the next attempt the last one, so the test need not wait for ten.
		s.WaitFor("a failed attempt waiting for its retry", wait, func() bool {
			res, err := db.Write.Exec(`UPDATE river_job SET max_attempts = attempt + 1
				WHERE kind = 'rollback_pull_request' AND state = 'retryable'`)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := res.RowsAffected()
			return n == 1
		})
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
