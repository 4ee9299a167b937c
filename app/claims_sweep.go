package app

import (
	"context"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// claimSweepAge is how old a creation claim (pipeline.Deps.Claim) must be
// before the sweep looks at it. A job releases its claim when it is done
// creating, so a claim outlives its job only when the job was lost while
// holding it (its process killed): the key's next claimant takes it over,
// and a key nobody claims again would keep its row for good.
const claimSweepAge = time.Hour

// sweepClaims deletes the creation claims taken before before whose job
// will not run again (River finished it, or no longer has it). A claim of
// a job still queued, running or waiting to retry is kept, however old.
func sweepClaims(ctx context.Context, db *store.DB, before time.Time) (int64, error) {
	res, err := db.Write.ExecContext(ctx, `DELETE FROM creation_claims WHERE claimed_at < $1
		AND NOT EXISTS (SELECT 1 FROM river_job j WHERE j.id = creation_claims.claim AND j.state IN (`+store.RiverLiveStates+`))`,
		store.Micros(before))
	if err != nil {
		return 0, fmt.Errorf("sweep creation claims of jobs gone: %w", err)
	}
	return res.RowsAffected()
}
