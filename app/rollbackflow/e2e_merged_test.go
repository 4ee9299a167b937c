package rollbackflow_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// mergedEvent is GitHub's pull_request closed delivery for rec's pull
// request, merged at mergedAt.
func (s *scene) mergedEvent(rec records.Record, mergedAt time.Time) []byte {
	return e2etest.Edit(s.T, githubtest.LoadPayload(s.T, "pull_request", "closed.payload.json"), func(m map[string]any) {
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		m["number"] = rec.PRNumber
		pr := m["pull_request"].(map[string]any)
		pr["number"], pr["merged"], pr["html_url"], pr["state"] = rec.PRNumber, true, rec.PRURL, "closed"
		pr["merged_at"] = mergedAt.Format(time.RFC3339)
		r := m["repository"].(map[string]any)
		r["full_name"], r["name"] = gitops, "gitops"
	})
}

// The stall clock of a rollback release starts when its pull request is
// merged (seed 003, decision 6), so the merge must reach the record:
// before it the record has no merge time (and cannot stall), after the
// pull_request closed+merged delivery it has GitHub's merged_at.
func TestMergedRollbackPullRequestStartsItsReleaseStallClock(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
			[]byte(`{"app":"checkout","environment":"prod","reason":"r3 leaks memory"}`))
		var acc rollbackflow.Accepted
		if err := json.Unmarshal(out, &acc); status != 202 || err != nil {
			t.Fatalf("POST /api/v1/rollbacks = %d %s (%v)", status, out, err)
		}
		rec := s.waitRelease(acc.ReleaseID)
		s.Settle(jobKinds...)
		if n := s.Int(`SELECT COUNT(*) FROM records WHERE release_id = $1 AND merged_at IS NULL`, rec.ReleaseID); n != 1 {
			t.Fatalf("rollback %s has a merge time before its pull request merged", rec.ReleaseID)
		}

		mergedAt := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
		s.Deliver("pull_request", s.mergedEvent(rec, mergedAt))
		s.WaitFor("the merge time on the rollback's record", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE release_id = $1 AND merged_at IS NOT NULL`, rec.ReleaseID) == 1
		})
		if got := s.Int(`SELECT merged_at FROM records WHERE release_id = $1`, rec.ReleaseID); got != int(store.Micros(mergedAt)) {
			t.Errorf("merged_at = %d, want %d (the pull request's merged_at)", got, store.Micros(mergedAt))
		}
		if r, _ := s.release(rec.ReleaseID); r.State != records.StateOpened {
			t.Errorf("merged rollback is %s, want still %s until a fact arrives", r.State, records.StateOpened)
		}
	})
}

// A rollback release recorded with the app's repository and no pr_url is
// the pull request of that number in the GitOps repository its config
// names: that pull request's merge starts its stall clock.
func TestMergedGitOpsPullRequestMarksItsRollbackWithoutURL(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		rec := s.rollbackWithoutURL(dbURL)
		mergedAt := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
		s.Deliver("pull_request", s.mergedEvent(rec, mergedAt))
		s.Settle(jobKinds...)
		if got := s.Int(`SELECT COALESCE(merged_at, 0) FROM records WHERE release_id = $1`, rec.ReleaseID); got != int(store.Micros(mergedAt)) {
			t.Errorf("merged_at = %d, want %d: the merged pull request is %s#%d, the rollback's", got, store.Micros(mergedAt), gitops, rec.PRNumber)
		}
	})
}
