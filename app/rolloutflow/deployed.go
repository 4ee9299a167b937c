package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Deployed is, of releaseIDs, those whose rollout deployed a batch to
// hosts (a deploy run succeeded), with the rollout's status. A release
// rolled out by a deploy workflow that sends no facts stays opened in its
// record until its rollout succeeds (and reports it healthy, healthy.go),
// and for good when the rollout fails; this is what says it ran on hosts
// nonetheless (previous counts such releases too, deployedByRollout). db
// is only read.
func Deployed(ctx context.Context, db *sql.DB, releaseIDs []string) (map[string]Status, error) {
	out := map[string]Status{}
	const chunk = 500
	for start := 0; start < len(releaseIDs); start += chunk {
		ids := releaseIDs[start:min(start+chunk, len(releaseIDs))]
		args := []any{KindDeploy, RunSuccess}
		marks := make([]string, len(ids))
		for i, id := range ids {
			args = append(args, id)
			marks[i] = fmt.Sprintf("$%d", len(args))
		}
		rows, err := db.QueryContext(ctx, `SELECT r.release_id, r.status FROM rollouts r
			WHERE r.release_id IN (`+strings.Join(marks, ", ")+`)
			AND EXISTS (SELECT 1 FROM rollout_batches b WHERE b.rollout_id = r.id AND b.kind = $1 AND b.state = $2)`, args...)
		if err != nil {
			return nil, fmt.Errorf("releases deployed by their rollout: %w", err)
		}
		for rows.Next() {
			var id, st string
			if err := rows.Scan(&id, &st); err != nil {
				rows.Close()
				return nil, fmt.Errorf("releases deployed by their rollout: %w", err)
			}
			out[id] = Status(st)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("releases deployed by their rollout: %w", err)
		}
	}
	return out, nil
}

// Rolling reports whether releaseID has a rollout that has not ended, or
// that ended after since. A release rolled out in waves gets its first
// fact, at the latest, when its rollout succeeds (healthy.go), which can be
// hours after it opened: the stall check waits for the rollout, and gives
// a rollout that ended with no fact stall_after from its end. db is only
// read.
func Rolling(ctx context.Context, db *sql.DB, releaseID string, since int64) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM rollouts WHERE release_id = $1
		AND (status NOT IN ($2, $3) OR updated_at > $4)`, releaseID, Succeeded, Failed, since).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("rollout of release %s: %w", releaseID, err)
	}
	return n > 0, nil
}
