package app

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"

	"github.com/ripcord/ripcord/internal/store"
)

// Job queue defaults.
const (
	deliveryMaxAttempts = 8
	queueWorkers        = 8
	jobTimeout          = 2 * time.Minute
	fetchCooldown       = 10 * time.Millisecond
	fetchPollInterval   = 200 * time.Millisecond
)

// DeliveryArgs is the job that works one stored webhook delivery.
type DeliveryArgs struct {
	DeliveryID string `json:"delivery_id"`
}

// Kind names the job in the queue.
func (DeliveryArgs) Kind() string { return "delivery" }

var deliveryJobOpts = &river.InsertOpts{MaxAttempts: deliveryMaxAttempts}

// EventHandler is how a capability acts on a delivery. Handle loads what it
// needs and decides (reads and GitHub GETs are fine; no writes) and returns a
// Commit, or nil when the delivery is not its business. Commits run in one
// transaction with the delivery's completion, so a crash or a redelivery never
// applies a delivery twice; effects are queued as jobs from the Commit.
type EventHandler interface {
	Handles() []string
	Handle(ctx context.Context, d Delivery) (Commit, error)
}

// Commit writes a handler's results inside the delivery's transaction.
type Commit func(ctx context.Context, tx *sql.Tx) error

type deliveryWorker struct {
	river.WorkerDefaults[DeliveryArgs]
	db       *store.DB
	handlers map[string][]EventHandler
	metrics  *metrics
	log      *slog.Logger
}

func (w *deliveryWorker) Timeout(*river.Job[DeliveryArgs]) time.Duration { return jobTimeout }

func (w *deliveryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) (err error) {
	start := time.Now()
	id := job.Args.DeliveryID
	d, err := getDelivery(ctx, w.db.Write, id, true)
	if err != nil {
		return fmt.Errorf("load delivery %s: %w", id, err)
	}
	outcome := DeliveryProcessed
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
		if err != nil {
			outcome = w.recordFailure(ctx, job, d, err)
		}
		w.metrics.processed.WithLabelValues(eventLabel(d.Event), outcome).Inc()
		w.metrics.jobSeconds.WithLabelValues(job.Kind, outcome).Observe(time.Since(start).Seconds())
	}()

	var commits []Commit
	for _, h := range w.handlers[d.Event] {
		c, err := h.Handle(ctx, d)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", d.Event, d.Action, err)
		}
		if c != nil {
			commits = append(commits, c)
		}
	}
	if len(commits) == 0 {
		outcome = DeliveryIgnored
	}
	return w.db.InTx(ctx, func(tx *sql.Tx) error {
		for _, c := range commits {
			if err := c(ctx, tx); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET state = $2, attempts = $3, last_error = '',
			processed_at = $4, processed_count = processed_count + 1 WHERE id = $1`,
			id, outcome, job.Attempt, store.Micros(time.Now())); err != nil {
			return fmt.Errorf("mark delivery %s %s: %w", id, outcome, err)
		}
		_, err := river.JobCompleteTx[*riverdatabasesql.Driver](ctx, tx, job)
		return err
	})
}

// recordFailure keeps the error on the delivery; after the last attempt the
// delivery is failed for good, and says why.
func (w *deliveryWorker) recordFailure(ctx context.Context, job *river.Job[DeliveryArgs], d Delivery, cause error) string {
	state, outcome := DeliveryQueued, "retried"
	if job.Attempt >= job.MaxAttempts {
		state, outcome = DeliveryFailed, DeliveryFailed
	}
	if _, err := w.db.Write.ExecContext(context.WithoutCancel(ctx),
		`UPDATE deliveries SET state = $2, attempts = $3, last_error = $4 WHERE id = $1`,
		d.ID, state, job.Attempt, cause.Error()); err != nil {
		w.log.Error("record delivery failure", "delivery", d.ID, "err", err)
	}
	w.log.Warn("delivery failed", "delivery", d.ID, "event", d.Event, "attempt", job.Attempt,
		"max_attempts", job.MaxAttempts, "err", cause)
	return outcome
}

func newRiver(db *store.DB, workers *river.Workers, log *slog.Logger) (*river.Client[*sql.Tx], error) {
	rc, err := river.NewClient(db.RiverDriver(), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: queueWorkers}},
		Workers:           workers,
		FetchCooldown:     fetchCooldown,
		FetchPollInterval: fetchPollInterval,
		JobTimeout:        jobTimeout,
		Logger:            log.With("component", "jobs"),
		MaxAttempts:       deliveryMaxAttempts,
	})
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	return rc, nil
}
