package app

import (
	"context"
	"database/sql"
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
	return err
}

// sweepDeliveries deletes the deliveries finished and received before
// cutoff, a chunk per transaction, and returns how many it deleted.
func sweepDeliveries(ctx context.Context, db *store.DB, cutoff time.Time) (int, error) {
	total := 0
	for {
		var n int
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			var err error
			n, err = sweepChunkOf(ctx, db, tx, store.Micros(cutoff))
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep deliveries: %w", err)
		}
		if n < sweepChunk {
			return total, nil
		}
	}
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
