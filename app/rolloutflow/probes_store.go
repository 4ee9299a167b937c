package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// A probe round is the probe workflow of one pass (or batch) for one
// reading. It is kept as a row of rollout_batches with kind probe, keyed
// by stage, pass and batch (-1 for a stage's gate), whose name is the
// reading the round belongs to: a gate reads one reading at a time, so the
// next reading's round takes the row over, and results posted for an older
// reading find nothing to land on.

// roundClosed is a round whose reading was taken: results posted later
// are refused.
const roundClosed = "closed"

// roundRetry is a round whose dispatch GitHub answered with a 5xx, or not
// at all: no probe was sent, so it is no reading yet; it is dispatched
// again until its reading's interval is over (runnerRounds).
const roundRetry = "retry"

// probeRetryDelay is how soon a round in roundRetry is dispatched again.
const probeRetryDelay = 10 * time.Second

// roundLimited is a round not dispatched for GitHub's rate limit of the
// installation (met by its dispatch, or stored by another request): no
// probe was sent, so it is no reading, however long the wait; it is
// dispatched after the stored limit's reset (runnerRounds).
const roundLimited = "rate-limited"

// roundLost is a round not dispatched because the App lost access (the
// repository was removed from the installation, the installation was
// deleted or suspended): no probe was sent, so it is no reading; it is
// asked for again at each poll (runPoll) until access is back, as a batch
// is.
const roundLost = "access-lost"

// probeRound is what is known of one round.
type probeRound struct {
	Reading      string
	State        string // dispatching, retry, queued, failure (not dispatched), success (results arrived) or closed
	RunID        int64
	Detail       string // the posted results as JSON; why a dispatch failed
	DispatchedAt time.Time
	UpdatedAt    time.Time // for roundLost: when it was last asked for
}

// loadProbeRounds reads a rollout's probe rounds.
func loadProbeRounds(ctx context.Context, q querier, id string) (map[Ref]probeRound, error) {
	rows, err := q.QueryContext(ctx, `SELECT stage, pass, batch, name, state, run_id, detail, dispatched_at, updated_at
		FROM rollout_batches WHERE rollout_id = $1 AND kind = 'probe'`, id)
	if err != nil {
		return nil, fmt.Errorf("probe rounds of rollout %s: %w", id, err)
	}
	defer rows.Close()
	out := map[Ref]probeRound{}
	for rows.Next() {
		ref := Ref{Kind: KindProbe}
		var p probeRound
		var at, updated int64
		if err := rows.Scan(&ref.Stage, &ref.Pass, &ref.Batch, &p.Reading, &p.State, &p.RunID, &p.Detail, &at, &updated); err != nil {
			return nil, fmt.Errorf("probe rounds of rollout %s: %w", id, err)
		}
		p.DispatchedAt, p.UpdatedAt = store.Time(at), store.Time(updated)
		out[ref] = p
	}
	return out, rows.Err()
}

// claimProbeRound records that the round of reading is about to be
// dispatched; false when it was claimed before, so a round is never
// dispatched twice.
func claimProbeRound(ctx context.Context, tx *sql.Tx, id string, ref Ref, reading string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO rollout_batches
		(rollout_id, kind, stage, pass, batch, name, ord, state, dispatched_at, updated_at)
		VALUES ($1, 'probe', $2, $3, $4, $5, 0, $6, $7, $7)
		ON CONFLICT (rollout_id, kind, stage, pass, batch) DO UPDATE SET name = excluded.name,
			state = excluded.state, run_id = 0, detail = '', dispatched_at = excluded.dispatched_at,
			updated_at = excluded.updated_at
		WHERE rollout_batches.name <> excluded.name`,
		id, ref.Stage, ref.Pass, ref.Batch, reading, RunDispatching, store.Micros(now))
	if err != nil {
		return false, fmt.Errorf("claim probe round %s of rollout %s: %w", reading, id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// reclaimProbeRound claims a round that was not dispatched (roundRetry,
// roundLimited, roundLost) for its next dispatch; false when another tick
// did. A round in roundRetry keeps its dispatch time: if it is never sent,
// it is red an interval after its reading was due; once sent, it is
// dispatched as of then (probeSentAt). One that waited for a rate limit's
// reset or for access is dispatched as if for the first time: its results
// are awaited an interval from now, and the reading is as of now.
func reclaimProbeRound(ctx context.Context, tx *sql.Tx, id, reading string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE rollout_batches SET state = $1, updated_at = $2,
		dispatched_at = CASE WHEN state = $5 THEN dispatched_at ELSE $2 END
		WHERE rollout_id = $3 AND kind = 'probe' AND name = $4 AND state IN ($5, $6, $7)`,
		RunDispatching, store.Micros(now), id, reading, roundRetry, roundLimited, roundLost)
	if err != nil {
		return false, fmt.Errorf("claim probe round %s of rollout %s again: %w", reading, id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// probeSentAt makes now the dispatch time of reading's round, retried
// after a 5xx and now sent: its results are awaited an interval from the
// dispatch that got through (not from the first try, which sent no probe
// and could leave them seconds), and the reading is as of then, as for a
// round that waited for a rate limit's reset. Not once its results came.
func probeSentAt(ctx context.Context, tx *sql.Tx, id, reading string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE rollout_batches SET dispatched_at = $1
		WHERE rollout_id = $2 AND kind = 'probe' AND name = $3 AND state = $4`,
		store.Micros(now), id, reading, RunDispatching)
	if err != nil {
		return fmt.Errorf("update probe round %s of rollout %s: %w", reading, id, err)
	}
	return nil
}

// setProbeDispatched records GitHub's answer to a round's dispatch, unless
// its results came first.
func setProbeDispatched(ctx context.Context, tx *sql.Tx, id, reading string, runID int64, state, detail string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE rollout_batches SET run_id = $1, state = $2, detail = $3, updated_at = $4
		WHERE rollout_id = $5 AND kind = 'probe' AND name = $6 AND state = $7`,
		runID, state, detail, store.Micros(now), id, reading, RunDispatching)
	if err != nil {
		return fmt.Errorf("update probe round %s of rollout %s: %w", reading, id, err)
	}
	return nil
}

// errStaleReading is a post for a reading the rollout no longer waits for.
var errStaleReading = errors.New("stale reading")

// roundOf finds the round a runner posts for.
func roundOf(ctx context.Context, q querier, id, reading string) (Ref, probeRound, error) {
	ref := Ref{Kind: KindProbe}
	p := probeRound{Reading: reading}
	var at int64
	err := q.QueryRowContext(ctx, `SELECT stage, pass, batch, state, run_id, dispatched_at FROM rollout_batches
		WHERE rollout_id = $1 AND kind = 'probe' AND name = $2`, id, reading).
		Scan(&ref.Stage, &ref.Pass, &ref.Batch, &p.State, &p.RunID, &at)
	if errors.Is(err, sql.ErrNoRows) || p.State == roundClosed {
		return ref, p, errStaleReading
	}
	if err != nil {
		return ref, p, fmt.Errorf("probe round %s of rollout %s: %w", reading, id, err)
	}
	p.DispatchedAt = store.Time(at)
	return ref, p, nil
}

// storeProbeResults stores the results of a round once; false when they
// had been stored before (a repeated post) or the round moved on.
func storeProbeResults(ctx context.Context, tx *sql.Tx, id, reading string, runID int64, results []RunnerProbe, now time.Time) (bool, error) {
	body, err := json.Marshal(results)
	if err != nil {
		return false, fmt.Errorf("encode probe results of %s: %w", reading, err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE rollout_batches SET state = $1, detail = $2,
		run_id = CASE WHEN run_id = 0 THEN $3 ELSE run_id END, updated_at = $4
		WHERE rollout_id = $5 AND kind = 'probe' AND name = $6 AND state <> $1 AND state <> $7`,
		RunSuccess, string(body), runID, store.Micros(now), id, reading, roundClosed)
	if err != nil {
		return false, fmt.Errorf("store probe results of %s for rollout %s: %w", reading, id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// closeProbeRounds marks the rounds of a reading taken.
func closeProbeRounds(ctx context.Context, tx *sql.Tx, id string, readings []string, now time.Time) error {
	for _, reading := range readings {
		if _, err := tx.ExecContext(ctx, `UPDATE rollout_batches SET state = $1, updated_at = $2
			WHERE rollout_id = $3 AND kind = 'probe' AND name = $4`, roundClosed, store.Micros(now), id, reading); err != nil {
			return fmt.Errorf("close probe round %s of rollout %s: %w", reading, id, err)
		}
	}
	return nil
}
