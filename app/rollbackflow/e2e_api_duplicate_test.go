package rollbackflow_test

import (
	"encoding/json"
	"testing"

	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// openFirstRollback opens the rollback of r3 to r2 through the API and
// returns its release, its pull request open in the GitOps repository.
func openFirstRollback(t *testing.T, s *scene) (rollbackflow.Accepted, string, int) {
	t.Helper()
	status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
		[]byte(`{"app":"checkout","environment":"prod","reason":"r3 leaks memory"}`))
	var acc rollbackflow.Accepted
	if err := json.Unmarshal(out, &acc); status != 202 || err != nil {
		t.Fatalf("POST /api/v1/rollbacks = %d %s (%v)", status, out, err)
	}
	rec := s.waitRelease(acc.ReleaseID)
	s.Settle(jobKinds...)
	return acc, rec.PRURL, rec.PRNumber
}

// POST /api/v1/rollbacks for the rollback that is open already, once its
// job is no longer kept (River deletes completed jobs after a day): the
// answer is a duplicate naming the open pull request, and nothing is
// queued, as `/ripcord rollback` answers "open already".
func TestRollbackAPIForTheOpenRollbackIsADuplicate(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		acc, prURL, prNumber := openFirstRollback(t, s)
		db := testdb.Open(t, dbURL)
		if _, err := db.Write.Exec(`DELETE FROM river_job WHERE kind = 'rollback_pull_request' AND state = 'completed'`); err != nil {
			t.Fatal(err)
		}

		status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
			[]byte(`{"app":"checkout","environment":"prod","reason":"again"}`))
		var again struct {
			rollbackflow.Accepted
			PRURL    string `json:"pr_url"`
			PRNumber int    `json:"pr_number"`
		}
		_ = json.Unmarshal(out, &again)
		if status != 202 || !again.Duplicate || again.ReleaseID != acc.ReleaseID || again.JobID != 0 ||
			again.PRURL != prURL || again.PRNumber != prNumber {
			t.Errorf("second POST = %d %s, want 202, release %s, duplicate, no job, pull request %s (#%d)",
				status, out, acc.ReleaseID, prURL, prNumber)
		}
		if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`); n != 0 {
			t.Errorf("rollback jobs queued by the second request = %d, want 0", n)
		}
	})
}
