package records

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// NewestRan counts only releases that ran: an opened release (its pull
// request not merged), a withdrawn one (closed without merging) and one
// whose deployment failed before any fact (FailUnrun) take no place among a
// target's newest, so they cannot push a release that ran out of an
// eligibility window.
func TestNewestRanLeavesOutReleasesThatNeverRan(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		ctx := context.Background()
		openRelease(t, s, record("R1", StateOpened, 1))
		applyFact(t, s, fact("R1", PhaseHealthy, 2), "", at(2))
		openRelease(t, s, record("W2", StateOpened, 3))
		if err := s.db.InTx(ctx, func(tx *sql.Tx) error {
			_, ok, err := s.WithdrawRelease(ctx, tx, "W2", "pull request closed without merging", nil, at(4))
			if err == nil && !ok {
				t.Error("W2 was not withdrawn")
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		openRelease(t, s, record("O3", StateOpened, 5))
		openRelease(t, s, record("F4", StateOpened, 6))
		if err := s.db.InTx(ctx, func(tx *sql.Tx) error {
			_, ok, err := s.FailUnrunRelease(ctx, tx, "F4", "the agent failed before its patch", nil, at(7))
			if err == nil && !ok {
				t.Error("F4 was not failed")
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}

		got, err := s.NewestRan(ctx, 5, []Target{{App: "checkout", Environment: "prod", Cluster: "prod-eu"}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ReleaseID)
		}
		if !slices.Equal(ids, []string{"R1"}) {
			t.Errorf("NewestRan = %v, want [R1]: the withdrawn W2, the opened O3 and F4, failed before it ran, never ran", ids)
		}
	})
}
