package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
)

// maxBatch bounds one group commit; more waiting deliveries go in the next.
const maxBatch = 256

// groupWriter writes deliveries in group commits: a delivery that arrives
// while a commit is in flight waits for the next one, which takes every
// delivery that arrived meanwhile. One fsync then covers many deliveries, and
// at low load a delivery is committed at once (no timer). The deliveries
// table is the durable queue; after a commit the writer wakes the drain job
// unless one is pending, so River sees one insert per drain, not per commit.
type groupWriter struct {
	db      *store.DB
	river   *river.Client[*sql.Tx]
	metrics *metrics
	// drainPending is shared with the drain worker (deliveryRunner).
	drainPending *atomic.Bool
	log          *slog.Logger

	in       chan *pendingWrite
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

type pendingWrite struct {
	d        Delivery
	inserted bool
	err      error
	done     chan struct{}
}

var errStopping = errors.New("intake: the server is stopping")

func newGroupWriter(db *store.DB, rc *river.Client[*sql.Tx], m *metrics, drainPending *atomic.Bool, log *slog.Logger) *groupWriter {
	w := &groupWriter{db: db, river: rc, metrics: m, drainPending: drainPending, log: log,
		in: make(chan *pendingWrite), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Write stores d and its processing job durably. inserted is false when a
// delivery with the same id was stored before (a redelivery).
func (w *groupWriter) Write(ctx context.Context, d Delivery) (inserted bool, err error) {
	p := &pendingWrite{d: d, done: make(chan struct{})}
	select {
	case w.in <- p:
	case <-w.stop:
		return false, errStopping
	case <-ctx.Done():
		return false, ctx.Err()
	}
	// Once handed over, the write completes whatever the caller does, so wait
	// for it: answering before the commit would break "stored, then 202".
	<-p.done
	return p.inserted, p.err
}

// Close finishes the commit in flight and stops taking writes.
func (w *groupWriter) Close() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

func (w *groupWriter) run() {
	defer close(w.done)
	for {
		var first *pendingWrite
		select {
		case first = <-w.in:
		case <-w.stop:
			return
		}
		batch := []*pendingWrite{first}
	drain:
		for len(batch) < maxBatch {
			select {
			case p := <-w.in:
				batch = append(batch, p)
			default:
				break drain
			}
		}
		start := time.Now()
		err := w.commit(batch)
		w.metrics.commitTime.Observe(time.Since(start).Seconds())
		w.metrics.batchSize.Observe(float64(len(batch)))
		for _, p := range batch {
			if err != nil {
				p.err = err
			}
			close(p.done)
		}
	}
}

func (w *groupWriter) commit(batch []*pendingWrite) error {
	// The commit must finish even if a client hangs up: the caller's context
	// is not used here.
	ctx := context.Background()
	inserted := false
	err := w.db.InDurableTx(ctx, func(tx *sql.Tx) error {
		inserted = false
		stmt, err := tx.PrepareContext(ctx, insertDelivery)
		if err != nil {
			return fmt.Errorf("prepare delivery insert: %w", err)
		}
		defer stmt.Close()
		var ids []string
		seen := map[string]bool{}
		for _, p := range batch {
			p.inserted = false
			if seen[p.d.ID] { // the same delivery twice in one batch
				continue
			}
			seen[p.d.ID] = true
			res, err := stmt.ExecContext(ctx, p.d.ID, p.d.Event, p.d.Action, p.d.InstallationID,
				p.d.Repository, p.d.Body, store.Micros(p.d.ReceivedAt))
			if err != nil {
				return fmt.Errorf("store delivery %s: %w", p.d.ID, err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				p.inserted = true
				ids = append(ids, p.d.ID)
			}
		}
		inserted = len(ids) > 0
		return nil
	})
	if err != nil || !inserted {
		return err
	}
	w.wakeDrain(ctx)
	return nil
}

// wakeDrain queues a drain unless one is pending. It runs after the
// deliveries committed, so a drain that starts (and clears the flag) before
// this check reads them, and one that starts after is this one: no delivery
// waits for the next. A failure here loses nothing: the deliveries are
// stored, and the next commit or the start-up drain wakes a drain.
func (w *groupWriter) wakeDrain(ctx context.Context) {
	if !w.drainPending.CompareAndSwap(false, true) {
		return
	}
	if _, err := w.river.Insert(ctx, DeliveryBatchArgs{}, drainOpts); err != nil {
		w.drainPending.Store(false)
		w.log.Warn("queue a drain of deliveries", "err", err)
	}
}

const insertDelivery = `INSERT INTO deliveries (id, event, action, installation_id, repository, body, received_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`
