package rolloutflow_test

import (
	"reflect"
	"testing"

	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A click on Approve that is refused (the clicker may only read) changes
// nothing GitHub puts in the next click's payload: the refusal goes to the
// rollout's audit trail, not into the check run, and a requested_action
// payload has no field of its own per click. Once the clicker is given
// write, the same person's second click is byte for byte the first under
// a new delivery id, and it must approve. A guard that drops a delivery
// whose event and body were seen before (a replay) would drop this one.
func TestApproveClickedAgainAfterARefusalApproves(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := atFirstApproval(t, dbURL, e2eConfig, "read")
		e := s.Env
		s.settle()
		before, _ := s.check()
		body := s.clickBody("bob") // the check run as GitHub shows it at the pause

		first := s.Deliver("check_run", body)
		s.settle()
		if st := s.status(); st.Rollout.Status != rolloutflow.PausedApproval || len(e.GitHub.Dispatches(repo)) != 1 {
			t.Fatalf("a reader's click moved the rollout: %s, %d dispatches", st.Rollout.Status, len(e.GitHub.Dispatches(repo)))
		}
		if after, _ := s.check(); !reflect.DeepEqual(before, after) {
			t.Fatalf("the refused click rewrote the check run, so the next click's payload would differ:\nbefore %+v\nafter  %+v", before, after)
		}

		e.GitHub.SetPermission(repo, "bob", "write")
		second := s.Deliver("check_run", body) // the same bytes, as GitHub would send them
		if first == second {
			t.Fatalf("both clicks were delivered as %s, want two delivery ids", first)
		}
		s.finish(2)
		e.WaitFor("the rollout to succeed after the second click", wait, func() bool {
			return s.status().Rollout.Status == rolloutflow.Succeeded
		})
		if got := e.String(`SELECT state FROM deliveries WHERE id = $1`, second); got != "processed" {
			t.Errorf("the second click's delivery ended %q, want processed", got)
		}
	})
}
