package app

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
)

// The deliveries table is the intake's durable queue: a delivery is stored
// with state 'queued' before its 202, and the drain takes queued ones in
// the order they arrived, decides them and marks them done in the same
// transaction as their work. The drain is a loop of the server rather than
// a job: as a job it cost an insert, a fetch and a completion in River per
// round, more CPU on SQLite than the round's own work. What a job gave it,
// it keeps: one round at a time in a process, a timeout per round, and a
// retry (the next round) when a round fails. Across replicas the claim
// guard in claim keeps every delivery processed once.
const (
	// drainCooldown is the least time between two rounds that are not full,
	// so that under load a round takes many deliveries at once; a delivery
	// that arrives at a quiet server is taken at once.
	drainCooldown = 50 * time.Millisecond
	// drainPoll is how often the drain looks without being woken: for
	// deliveries another replica stored, and after a round that failed.
	drainPoll = time.Second
)

// drainer runs the drain loop of one server.
type drainer struct {
	runner *deliveryRunner
	health *dbHealth
	log    *slog.Logger
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	// abort ends the round in flight when Stop's deadline passes.
	abort       context.Context
	abortRounds context.CancelFunc
}

func newDrainer(r *deliveryRunner, health *dbHealth, log *slog.Logger) *drainer {
	abort, cancel := context.WithCancel(context.Background())
	return &drainer{runner: r, health: health, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), abort: abort, abortRounds: cancel}
}

// Wake asks for a round soon; it never blocks. A wake while a round runs
// leads to one more round after it, so a delivery committed during a round
// that did not read it is taken by the next.
func (d *drainer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Start runs the loop until Stop; its first round reads what an earlier
// run of the server left queued.
func (d *drainer) Start() {
	d.Wake()
	go d.run()
}

// Stop lets the round in flight finish and ends the loop; deliveries still
// queued wait for the next start. A round still running when ctx ends is
// abandoned: its handlers' context is cancelled and nothing of it is
// stored, so its deliveries stay queued, never attempted, and the next
// start takes them (exactly once: the round did not commit). Without the
// bound a handler waiting on GitHub would hold the stop for the round's
// timeout (2 min), past the grace period an orchestrator gives.
func (d *drainer) Stop(ctx context.Context) {
	d.once.Do(func() { close(d.stop) })
	select {
	case <-d.done:
		return
	case <-ctx.Done():
	}
	d.log.Warn("the drain round in flight did not finish in time; abandoning it: its deliveries stay queued for the next start")
	d.abortRounds()
	<-d.done
}

func (d *drainer) run() {
	defer close(d.done)
	poll := time.NewTicker(drainPoll)
	defer poll.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-d.wake:
		case <-poll.C:
		}
		for d.round() == drainLimit { // there may be more: drain on
			select {
			case <-d.stop:
				return
			default:
			}
		}
		select {
		case <-d.stop:
			return
		case <-time.After(drainCooldown):
		}
	}
}

// round runs one drain with a timeout, as a job would. Stopping does not
// cancel it: a round in flight finishes, unless it outlasts the stop's
// deadline (Stop aborts it then).
func (d *drainer) round() (n int) {
	ctx, cancel := context.WithTimeout(d.abort, jobTimeout)
	defer cancel()
	// A panic is a bug; it must not stop the server's only drain. The
	// round's transaction is rolled back (store.InTx) and the next tries
	// again.
	defer func() {
		if p := recover(); p != nil {
			d.log.Error("drain round panicked; the next round tries again", "panic", p, "stack", string(debug.Stack()))
			n = 0
		}
	}()
	n, err := d.runner.drainOnce(ctx, d.abort)
	switch {
	case err != nil && d.health.failed(err):
		// The outage is logged once (dbhealth.go), not once a second.
		d.log.Debug("drain of queued deliveries failed: the database is unavailable", "err", err)
	case err != nil:
		d.log.Warn("drain of queued deliveries failed; the next round tries again", "err", err)
	case d.runner.db.Dialect == store.Postgres:
		// A round that completed deliveries updated rows in place, which
		// PostgreSQL lets through on a full disk while it refuses every
		// write that needs a new block: like an empty round, which only
		// read, it ends an outage of a database that did not answer, not
		// one of a database that refuses writes.
		d.health.answered()
	case n > 0:
		// SQLite: an empty round only read, outside a transaction, which
		// proves nothing of the writer.
		d.health.ok()
	}
	return n
}

// drainQueue is the River queue older versions put DeliveryBatchArgs jobs in.
const drainQueue = "deliveries"

// drainQueuePoll is how often River looks in drainQueue. Only jobs an older
// version left there arrive in it, and all they do is wake the drain, which
// looks for queued deliveries every drainPoll on its own. Polled as often as
// the default queue, it cost as many SQL statements as that queue (River's
// SQLite driver parses each one anew), on an idle server and under load.
const drainQueuePoll = 5 * time.Second

// drainWakeWorker completes DeliveryBatchArgs jobs an older version queued,
// by waking the drain.
type drainWakeWorker struct {
	river.WorkerDefaults[DeliveryBatchArgs]
	drain *drainer
}

func (w *drainWakeWorker) Work(context.Context, *river.Job[DeliveryBatchArgs]) error {
	w.drain.Wake()
	return nil
}
