package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/payload"
	"github.com/ripcord/ripcord/internal/store"
)

// batchConcurrency bounds how many deliveries of one batch are decided at once.
const batchConcurrency = 8

// drainLimit bounds the deliveries one drain round takes; a full round is
// followed by another at once (drain.go).
const drainLimit = 256

// DeliveryBatchArgs was the job that drained the deliveries table before
// the drain became a loop of the server (drain.go). A job of this kind
// queued by an older version only wakes the drain.
type DeliveryBatchArgs struct{}

// Kind names the job in the queue.
func (DeliveryBatchArgs) Kind() string { return "delivery_batch" }

// DeliveryArgs is the job that retries one delivery that failed in its batch.
// Its attempts continue the batch's: attempt n of the job is attempt n+1 of
// the delivery.
type DeliveryArgs struct {
	DeliveryID string `json:"delivery_id"`
}

// Kind names the job in the queue.
func (DeliveryArgs) Kind() string { return "delivery" }

// deliveryRunner decides deliveries with the event handlers and applies the
// results; the drain (drain.go) and the retry worker share it.
type deliveryRunner struct {
	db          *store.DB
	river       func() *river.Client[*sql.Tx]
	handlers    map[string][]EventHandler
	metrics     *metrics
	log         *slog.Logger
	maxAttempts int
	policy      retryPolicy
}

// decided is one delivery after its handlers ran.
type decided struct {
	d       Delivery
	commits []Commit
	outcome string // processed or ignored
	err     error
}

func (r *deliveryRunner) decide(ctx context.Context, d Delivery) (res decided) {
	res = decided{d: d, outcome: DeliveryProcessed}
	defer func() {
		if p := recover(); p != nil {
			res.err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	for _, h := range r.handlers[d.Event] {
		c, err := h.Handle(ctx, d)
		if err != nil {
			res.err = fmt.Errorf("%s/%s: %w", d.Event, d.Action, err)
			return res
		}
		if c != nil {
			res.commits = append(res.commits, c)
		}
	}
	if len(res.commits) == 0 {
		res.outcome = DeliveryIgnored
	}
	return res
}

func runCommits(ctx context.Context, tx *sql.Tx, res decided) (err error) {
	// A commit that panics fails its delivery (which is retried, then ends
	// failed) instead of the drain round, which would meet it again.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s/%s: commit panicked: %v", res.d.Event, res.d.Action, p)
		}
	}()
	for _, c := range res.commits {
		if err := c(ctx, tx); err != nil {
			return fmt.Errorf("%s/%s: %w", res.d.Event, res.d.Action, err)
		}
	}
	return nil
}

// errClaimed means another worker completed a delivery first (a job rescued
// while its first run was still finishing). The transaction is rolled back, so
// nothing is applied twice; the job runs again and finds nothing to do.
var errClaimed = errors.New("delivery already completed by another worker")

// claim marks queued deliveries worked, in one statement. The state guard is
// what makes processing exactly-once: a second run of a job, after a crash or
// beside a rescued copy, claims nothing and its transaction is rolled back.
func claim(ctx context.Context, db *store.DB, tx *sql.Tx, ids []string, outcome string, attempt int) error {
	args := []any{outcome, attempt, store.Micros(time.Now())}
	res, err := tx.ExecContext(ctx, `UPDATE deliveries SET state = $1, attempts = $2, last_error = '',
		processed_at = $3, processed_count = processed_count + 1
		WHERE state = 'queued' AND id IN (`+placeholders(len(args)+1, len(ids))+`)`, append(args, anySlice(ids)...)...)
	if err != nil {
		return fmt.Errorf("mark %d deliveries %s: %w", len(ids), outcome, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(ids)) {
		return errClaimed
	}
	return nil
}

// failed records a delivery's failure inside tx and, while attempts remain,
// queues its retry job. It returns the outcome for the metrics.
func (r *deliveryRunner) failed(ctx context.Context, tx *sql.Tx, d Delivery, attempt int, cause error) (string, error) {
	state, outcome := DeliveryQueued, "retried"
	if attempt >= r.maxAttempts || pipeline.IsPermanent(cause) {
		state, outcome = DeliveryFailed, DeliveryFailed
	}
	if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET state = $2, attempts = $3, last_error = $4 WHERE id = $1`,
		d.ID, state, attempt, cause.Error()); err != nil {
		return "", fmt.Errorf("record failure of delivery %s: %w", d.ID, err)
	}
	r.log.Warn("delivery failed", "delivery", d.ID, "event", d.Event, "attempt", attempt, "max_attempts", r.maxAttempts, "err", cause)
	return outcome, nil
}

// drainOnce takes up to drainLimit queued deliveries never attempted,
// decides them with the handlers, and applies them all in one transaction;
// a delivery whose handler fails gets its own DeliveryArgs job with the
// retry backoff. It returns how many it took.
//
// On SQLite the deliveries are read, and decided, outside the transaction:
// the database has one writer, which the intake's group commits need, and
// one replica (README), so no other drain competes for them.
//
// On PostgreSQL several replicas drain one table. Each round reads its
// deliveries FOR UPDATE SKIP LOCKED inside the transaction that completes
// them, so two replicas take different deliveries: none is decided twice
// (handlers may ask GitHub, and its rate limit is shared), and no round is
// lost to another's claim. Should a replica die mid-round, its connection
// goes and with it the locks: the next round, of any replica, takes those
// deliveries at once. The transaction stays open while the round's
// deliveries are decided, which is bounded by the round's timeout.
//
// abort, when it ends, ends the round without storing anything: its
// transaction is rolled back, or (SQLite) never written (drainer.Stop).
func (w *deliveryRunner) drainOnce(ctx, abort context.Context) (n int, err error) {
	var results []decided
	var outcomes []string
	defer func(began time.Time) {
		if len(results) > 0 {
			w.metrics.timed(DeliveryBatchArgs{}.Kind(), began, &err)
		}
	}(time.Now())
	// ctx bounds the handlers. The round's transaction outlives it by
	// drainStoreGrace: a handler that runs out of time fails its delivery,
	// and that failure, with the others' results, must be stored. A round
	// that could not store them would take the same deliveries again, and
	// time out again, for ever.
	txCtx, cancel := outlive(ctx, drainStoreGrace)
	defer cancel()
	defer context.AfterFunc(abort, cancel)()
	if w.db.Dialect == store.Postgres {
		err = w.db.InTx(txCtx, func(tx *sql.Tx) error {
			// The transaction idles while handlers ask GitHub: a server-wide
			// idle_in_transaction_session_timeout shorter than a round must
			// not end it (the round would fail, and run again, for ever).
			if _, err := tx.ExecContext(txCtx, drainIdleTimeout); err != nil {
				return fmt.Errorf("allow the drain's transaction to idle: %w", err)
			}
			ds, err := w.loadQueued(ctx, tx, ` FOR UPDATE SKIP LOCKED`)
			if err != nil || len(ds) == 0 {
				return err
			}
			results = w.decideAll(ctx, ds)
			outcomes, err = w.complete(txCtx, tx, results)
			return err
		})
	} else {
		var ds []Delivery
		if ds, err = w.loadQueued(ctx, w.db.Read, ""); err != nil || len(ds) == 0 {
			return 0, err
		}
		results = w.decideAll(ctx, ds)
		err = w.db.InTx(txCtx, func(tx *sql.Tx) error {
			outcomes, err = w.complete(txCtx, tx, results)
			return err
		})
	}
	if err != nil {
		return 0, fmt.Errorf("complete delivery batch of %d: %w", len(results), err)
	}
	for i, res := range results {
		w.metrics.processed.WithLabelValues(eventLabel(res.d.Event), outcomes[i]).Inc()
	}
	return len(results), nil
}

// drainStoreGrace is how long past its deadline a drain round may take to
// store what its handlers decided.
const drainStoreGrace = 30 * time.Second

// outlive is ctx without its cancellation, ending instead grace after
// ctx's deadline (never, if it has none).
func outlive(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	c := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(c, d.Add(grace))
	}
	return c, func() {}
}

// drainIdleTimeout lets a PostgreSQL drain round's transaction idle as
// long as the round may take (drain.go bounds it by jobTimeout, and its
// writes by drainStoreGrace after that).
var drainIdleTimeout = fmt.Sprintf(`SET LOCAL idle_in_transaction_session_timeout = %d`,
	(jobTimeout + drainStoreGrace).Milliseconds())

// decideAll decides the deliveries of a round, batchConcurrency at a time.
func (w *deliveryRunner) decideAll(ctx context.Context, ds []Delivery) []decided {
	results := make([]decided, len(ds))
	sem := make(chan struct{}, batchConcurrency)
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = w.decide(ctx, d)
		}()
	}
	wg.Wait()
	return results
}

// complete applies a round's decisions in tx: the commits of each delivery
// under its own savepoint, the claims of those without commits together,
// and the failures with their retry jobs. It returns each one's outcome.
func (w *deliveryRunner) complete(ctx context.Context, tx *sql.Tx, results []decided) ([]string, error) {
	outcomes := make([]string, len(results))
	done := map[string][]string{} // outcome -> delivery ids without commits
	var retries []river.InsertManyParams
	for i, res := range results {
		if res.err == nil && len(res.commits) > 0 {
			res.err = w.commitIsolated(ctx, tx, res)
		} else if res.err == nil {
			done[res.outcome] = append(done[res.outcome], res.d.ID)
		}
		outcomes[i] = res.outcome
		if res.err == nil {
			continue
		}
		if errors.Is(res.err, errClaimed) {
			return nil, res.err
		}
		outcome, err := w.failed(ctx, tx, res.d, 1, res.err)
		if err != nil {
			return nil, err
		}
		outcomes[i] = outcome
		if outcome == "retried" {
			retries = append(retries, river.InsertManyParams{Args: DeliveryArgs{DeliveryID: res.d.ID},
				InsertOpts: &river.InsertOpts{MaxAttempts: w.maxAttempts - 1, ScheduledAt: time.Now().Add(w.policy.delay(1))}})
		}
	}
	for outcome, ids := range done {
		if err := claim(ctx, w.db, tx, ids, outcome, 1); err != nil {
			return nil, err
		}
	}
	if len(retries) > 0 {
		if _, err := w.river().InsertManyTx(ctx, tx, retries); err != nil {
			return nil, fmt.Errorf("queue %d delivery retries: %w", len(retries), err)
		}
	}
	return outcomes, nil
}

// commitIsolated claims one delivery and runs its commits under a savepoint,
// so a delivery whose commit fails is rolled back alone and the rest of the
// batch still commits.
func (w *deliveryRunner) commitIsolated(ctx context.Context, tx *sql.Tx, res decided) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT delivery`); err != nil {
		return err
	}
	err := claim(ctx, w.db, tx, []string{res.d.ID}, res.outcome, 1)
	if err == nil {
		err = runCommits(ctx, tx, res)
	}
	if err != nil {
		if _, rbErr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT delivery`); rbErr != nil {
			return fmt.Errorf("%w (and rolling back its savepoint: %v)", err, rbErr)
		}
		return err
	}
	_, err = tx.ExecContext(ctx, `RELEASE SAVEPOINT delivery`)
	return err
}

// querier is a pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// loadQueued reads, through q, the oldest queued deliveries never attempted
// (a failed one waits for its own retry job), with lock appended to the
// query; a drain run again after a crash finds the same ones, since its
// transaction never committed. Bodies are read only for events some
// handler acts on: most of what GitHub sends is ignored, and its payload
// need never be read back.
func (w *deliveryRunner) loadQueued(ctx context.Context, q querier, lock string) ([]Delivery, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, event, action, attempts, state, repository, installation_id
		FROM deliveries WHERE state = 'queued' AND attempts = 0 ORDER BY received_at, id LIMIT $1`+lock, drainLimit)
	if err != nil {
		return nil, fmt.Errorf("load queued deliveries: %w", err)
	}
	defer rows.Close()
	out := make([]Delivery, 0, drainLimit)
	var handled []string
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.ID, &d.Event, &d.Action, &d.Attempts, &d.State, &d.Repository, &d.InstallationID); err != nil {
			return nil, fmt.Errorf("load deliveries: %w", err)
		}
		if len(w.handlers[d.Event]) > 0 {
			handled = append(handled, d.ID)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil || len(handled) == 0 {
		return out, err
	}
	bodies, err := w.loadBodies(ctx, handled)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Body = bodies[out[i].ID]
	}
	return out, nil
}

func (w *deliveryRunner) loadBodies(ctx context.Context, ids []string) (map[string][]byte, error) {
	query := `SELECT id, body FROM deliveries WHERE id IN (` + placeholders(1, len(ids)) + `)`
	if w.db.Dialect == store.SQLite {
		query = `SELECT d.id, b.body FROM deliveries d JOIN delivery_bodies b ON b.seq = d.seq
			WHERE d.id IN (` + placeholders(1, len(ids)) + `)`
	}
	rows, err := w.db.Read.QueryContext(ctx, query, anySlice(ids)...)
	if err != nil {
		return nil, fmt.Errorf("load %d payloads: %w", len(ids), err)
	}
	defer rows.Close()
	bodies := make(map[string][]byte, len(ids))
	for rows.Next() {
		var id string
		var stored []byte
		if err := rows.Scan(&id, &stored); err != nil {
			return nil, fmt.Errorf("load payloads: %w", err)
		}
		body, err := payload.Unpack(stored)
		if err != nil {
			return nil, fmt.Errorf("payload of delivery %s: %w", id, err)
		}
		bodies[id] = body
	}
	return bodies, rows.Err()
}

// retryWorker works a DeliveryArgs job: one delivery's later attempts.
type retryWorker struct {
	river.WorkerDefaults[DeliveryArgs]
	*deliveryRunner
}

func (w *retryWorker) Timeout(*river.Job[DeliveryArgs]) time.Duration { return jobTimeout }

func (w *retryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) (err error) {
	defer w.metrics.timed(job.Kind, time.Now(), &err)
	d, err := getDelivery(ctx, w.db.Dialect, w.db.Write, job.Args.DeliveryID, true)
	if err != nil {
		return fmt.Errorf("load delivery %s: %w", job.Args.DeliveryID, err)
	}
	if d.State != DeliveryQueued {
		return nil
	}
	attempt := job.Attempt + 1
	res := w.decide(ctx, d)
	if res.err == nil {
		res.err = w.db.InTx(ctx, func(tx *sql.Tx) error {
			if err := claim(ctx, w.db, tx, []string{d.ID}, res.outcome, attempt); err != nil {
				return err
			}
			return runCommits(ctx, tx, res)
		})
	}
	if errors.Is(res.err, errClaimed) {
		return nil
	}
	if res.err == nil {
		w.metrics.processed.WithLabelValues(eventLabel(d.Event), res.outcome).Inc()
		return nil
	}
	// Record the failure; River retries the job with the same policy, or
	// discards it after its last attempt, when the delivery is failed too.
	// The job's context may be what ended it (its timeout): the record is
	// written without it, or a last attempt would leave the delivery queued
	// for ever, with nothing left to try it.
	rec := context.WithoutCancel(ctx)
	if err := w.db.InTx(rec, func(tx *sql.Tx) error {
		outcome, err := w.failed(rec, tx, d, attempt, res.err)
		if err == nil {
			w.metrics.processed.WithLabelValues(eventLabel(d.Event), outcome).Inc()
		}
		return err
	}); err != nil {
		w.log.Error("could not record a delivery's failure", "delivery", d.ID, "attempt", attempt, "err", err, "cause", res.err)
	}
	if pipeline.IsPermanent(res.err) {
		return river.JobCancel(res.err)
	}
	return res.err
}
