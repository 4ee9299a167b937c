package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
)

// Every webhook delivery is stored with its payload (12 kB and more), so
// without a sweep the database grows by about a gigabyte per 100,000
// deliveries, forever. DeliverySweepArgs deletes the deliveries that
// finished (processed, ignored or failed) before deliveries.retention, and
// their payloads. A delivery still queued, or waiting for a retry, is
// never deleted; audit events keep the id of the delivery that caused them.
//
// The same job ends the deliveries stranded in the queue (see
// failStrandedDeliveries) and deletes the creation claims of lost jobs
// (see sweepClaims).

// sweepChunk bounds one delete transaction, so the sweep never holds
// SQLite's one writer for long.
const sweepChunk = 1000

// DeliverySweepArgs deletes finished deliveries past their retention.
type DeliverySweepArgs struct{}

// Kind names the job in the queue.
func (DeliverySweepArgs) Kind() string { return "deliveries_sweep" }

type deliverySweepWorker struct {
	river.WorkerDefaults[DeliverySweepArgs]
	s *Server
}

func (w *deliverySweepWorker) Work(ctx context.Context, job *river.Job[DeliverySweepArgs]) (err error) {
	defer w.s.metrics.timed(job.Kind, time.Now(), &err)
	n, err := sweepDeliveries(ctx, w.s.db, time.Now().Add(-w.s.cfg.DeliveryRetention))
	if n > 0 {
		w.s.log.Info("swept finished deliveries past retention", "deleted", n, "retention", w.s.cfg.DeliveryRetention)
	}
	// After the deletion, so that a delivery failed here stays to be seen
	// until the next sweep at least.
	stranded, strandErr := failStrandedDeliveries(ctx, w.s.db)
	for _, d := range stranded {
		w.s.metrics.processed.WithLabelValues(eventLabel(d.Event), DeliveryFailed).Inc()
		w.s.log.Warn("delivery failed: no retry is left and its last attempt's result was never recorded",
			"delivery", d.ID, "event", d.Event, "attempts", d.Attempts, "err", d.LastError)
	}
	claims, claimErr := sweepClaims(ctx, w.s.db, time.Now().Add(-claimSweepAge))
	if claims > 0 {
		w.s.log.Info("swept creation claims left by jobs lost while holding them", "deleted", claims)
	}
	return errors.Join(err, strandErr, claimErr)
}

// A delivery the drain could not complete is left queued with attempts > 0
// and a DeliveryArgs job in the same transaction (delivery_work.go); from
// then on only that job works it, and the job records each attempt's
// failure and, after the last, the delivery failed. A job that cannot
// write that record (the database was down at the last attempt, or the
// process died and River's rescuer gave up on the job) ends all the same,
// and the delivery would stay queued for ever: the drain takes only
// deliveries never attempted. Such a delivery is stranded: queued,
// attempted, and with no retry job that will still run (River discarded,
// cancelled or completed it, or its cleaner deleted it since).
//
// A delivery never attempted is not stranded, however old: it is the
// queue itself, and the drain takes it when it runs (after an outage too).
// No age is used for attempted ones either: a retry job still scheduled
// runs when a server does, however late.

// liveRetryJob is true when a DeliveryArgs job for the delivery whose id
// column is idColumn will still run.
func liveRetryJob(dialect store.Dialect, idColumn string) string {
	return `EXISTS (SELECT 1 FROM river_job j WHERE j.kind = 'delivery' AND ` + store.RiverJobArg(dialect, "delivery_id") + ` = ` + idColumn + `
		AND j.state IN (` + store.RiverLiveStates + `))`
}

// strandedSQL reads the oldest stranded deliveries, $1 at most, with the
// state of their last retry job: along deliveries_retrying (migration
// 00027), which holds only the deliveries queued after an attempt.
func strandedSQL(dialect store.Dialect) string {
	return `SELECT d.id, d.event, d.attempts, d.last_error,
		COALESCE((SELECT CAST(j.state AS TEXT) FROM river_job j WHERE j.kind = 'delivery' AND ` + store.RiverJobArg(dialect, "delivery_id") + ` = d.id
			ORDER BY j.id DESC LIMIT 1), '')
		FROM deliveries d WHERE d.state = 'queued' AND d.attempts > 0 AND NOT ` + liveRetryJob(dialect, "d.id") + `
		ORDER BY d.received_at, d.id LIMIT $1`
}

// failStrandedDeliveries marks the stranded deliveries failed, with a
// last_error that says what happened and the error last recorded, and
// returns them as they now are.
func failStrandedDeliveries(ctx context.Context, db *store.DB) ([]Delivery, error) {
	var failed []Delivery
	err := db.InTx(ctx, func(tx *sql.Tx) error {
		failed = failed[:0]
		rows, err := tx.QueryContext(ctx, strandedSQL(db.Dialect), sweepChunk) // more are rare; the next sweep takes them
		if err != nil {
			return err
		}
		type stranded struct {
			d        Delivery
			jobState string
		}
		var found []stranded
		for rows.Next() {
			var s stranded
			if err := rows.Scan(&s.d.ID, &s.d.Event, &s.d.Attempts, &s.d.LastError, &s.jobState); err != nil {
				rows.Close()
				return err
			}
			found = append(found, s)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, s := range found {
			d := s.d
			job := "its retry job ended (" + s.jobState + ")"
			if s.jobState == "" {
				job = "its retry job is gone"
			}
			d.LastError = fmt.Sprintf("no retry is left: %s without recording the result of the delivery's last attempt "+
				"(the database may have been unreachable); last error recorded, after %d attempts: %s", job, d.Attempts, d.LastError)
			// Guarded as the query was: a retry that ran meanwhile wins.
			res, err := tx.ExecContext(ctx, `UPDATE deliveries SET state = 'failed', last_error = $2
				WHERE id = $1 AND state = 'queued' AND attempts = $3 AND NOT `+liveRetryJob(db.Dialect, "deliveries.id"),
				d.ID, d.LastError, d.Attempts)
			if err != nil {
				return fmt.Errorf("fail stranded delivery %s: %w", d.ID, err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				d.State = DeliveryFailed
				failed = append(failed, d)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fail stranded deliveries: %w", err)
	}
	return failed, nil
}

// sweepDeliveries deletes the deliveries finished and received before
// cutoff, a chunk per transaction, and returns how many it deleted.
func sweepDeliveries(ctx context.Context, db *store.DB, cutoff time.Time) (int, error) {
	n, err := db.InRounds(ctx, sweepChunk, func(tx *sql.Tx) (int, error) {
		return sweepChunkOf(ctx, db, tx, store.Micros(cutoff))
	})
	if err != nil {
		return n, fmt.Errorf("sweep deliveries: %w", err)
	}
	return n, nil
}

func sweepChunkOf(ctx context.Context, db *store.DB, tx *sql.Tx, cutoff int64) (int, error) {
	const finished = `state <> 'queued' AND received_at < $1`
	if db.Dialect == store.Postgres {
		res, err := tx.ExecContext(ctx, `DELETE FROM deliveries WHERE id IN
			(SELECT id FROM deliveries WHERE `+finished+` LIMIT $2)`, cutoff, sweepChunk)
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		return int(n), err
	}
	// SQLite: the rows, then the payloads of the rows deleted.
	rows, err := tx.QueryContext(ctx, `DELETE FROM deliveries WHERE seq IN
		(SELECT seq FROM deliveries WHERE `+finished+` LIMIT $2) RETURNING seq`, cutoff, sweepChunk)
	if err != nil {
		return 0, err
	}
	var seqs []any
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return 0, err
		}
		seqs = append(seqs, seq)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if len(seqs) == 0 {
		return 0, nil
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM delivery_bodies WHERE seq IN (`+placeholders(1, len(seqs))+`)`, seqs...)
	return len(seqs), err
}
