package recoveryflow

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/recovery"
)

// RuleSkipRollbackUnderWay names the skip decided for a failure whose
// release another episode is rolling back already.
const RuleSkipRollbackUnderWay = "skip-rollback-under-way"

// rollbackOnce turns ep's rollback decision into a skip when the recovery of
// another run is rolling back the same release already: a release deployed
// by two runs (a deploy started twice on one commit) that both fail is one
// failed deploy, and seed 000 decides a deploy's failure once. A second
// rollback would deploy the same target again behind the first one's back.
// It runs in the transaction that stores ep's decision, before that is
// stored: on PostgreSQL the decisions about one release are serialised by a
// transaction-scoped advisory lock; SQLite has a single writer.
func (f *flow) rollbackOnce(ctx context.Context, tx *sql.Tx, ep Episode) (Episode, error) {
	if ep.Decision.Action != recovery.ActionRollback || ep.ReleaseID == "" {
		return ep, nil
	}
	if f.deps.DB.Dialect == store.Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "ripcord-rollback/"+ep.ReleaseID); err != nil {
			return ep, fmt.Errorf("lock the rollbacks of release %s: %w", ep.ReleaseID, err)
		}
	}
	other, ok, err := scanEpisode(tx.QueryRowContext(ctx, rollingBackSQL, ep.ReleaseID, ep.Repository, ep.RunID))
	if err != nil || !ok {
		return ep, err
	}
	return rollbackUnderWay(ep, other), nil
}

// rollbackUnderWay is ep skipped because other rolls its release back.
func rollbackUnderWay(ep, other Episode) Episode {
	d := ep.Decision
	d.Action, d.Rule, d.Target = recovery.ActionSkip, RuleSkipRollbackUnderWay, nil
	d.Reason = fmt.Sprintf("Release %s failed in run %d too, and the recovery of that run is rolling it back to %s already; "+
		"not rolling back a second time.", ep.ReleaseID, other.RunID, targetName(other.Decision.Target))
	d.AuditEvents = []string{recovery.EventFailureDetected, recovery.EventRollbackSkipped}
	ep.Decision, ep.State = d, StateSkipped
	return ep
}

// rollingBackSQL is the oldest other episode rolling release $1 back. The
// state is written out, not a parameter, so that both databases read the
// partial index episodes_rolling_back (00028), which holds only those.
const rollingBackSQL = `SELECT ` + episodeColumns + ` FROM episodes
	WHERE release_id = $1 AND state = '` + string(StateRollingBack) + `' AND NOT (repository = $2 AND run_id = $3)
	ORDER BY created_at, repository, run_id LIMIT 1`
