package app

import (
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
)

// Job queue defaults.
const (
	deliveryMaxAttempts = 8
	retryBase           = time.Second
	maxRetryDelay       = 10 * time.Minute
	queueWorkers        = 8
	jobTimeout          = 2 * time.Minute
	fetchCooldown       = 50 * time.Millisecond
	fetchPollInterval   = 200 * time.Millisecond
)

// EventHandler and Commit are the pipeline's (see app/pipeline).
type (
	EventHandler = pipeline.EventHandler
	Commit       = pipeline.Commit
)

// retryPolicy retries a failed job after base × 2^(attempt-1), capped at
// maxRetryDelay, with up to 10% jitter so failures do not retry in step.
type retryPolicy struct{ base time.Duration }

func (p retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(p.delay(job.Attempt))
}

func (p retryPolicy) delay(attempt int) time.Duration {
	d := p.base << min(max(attempt-1, 0), 20)
	if d <= 0 || d > maxRetryDelay {
		d = maxRetryDelay
	}
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}

func newRiver(db *store.DB, workers *river.Workers, periodic []*river.PeriodicJob, policy retryPolicy, log *slog.Logger) (*river.Client[*sql.Tx], error) {
	rc, err := river.NewClient(db.RiverDriver(), &river.Config{
		PeriodicJobs: periodic,
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: queueWorkers},
			drainQueue: {MaxWorkers: 1, FetchPollInterval: drainQueuePoll}},
		Workers:              workers,
		FetchCooldown:        fetchCooldown,
		FetchPollInterval:    fetchPollInterval,
		JobTimeout:           jobTimeout,
		RescueStuckJobsAfter: jobTimeout + time.Minute,
		RetryPolicy:          policy,
		Logger:               log.With("component", "jobs"),
		MaxAttempts:          deliveryMaxAttempts,
	})
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	return rc, nil
}

// timed records a job's duration and outcome.
func (m *metrics) timed(kind string, start time.Time, err *error) {
	outcome := "ok"
	if *err != nil {
		outcome = "error"
	}
	m.jobSeconds.WithLabelValues(kind, outcome).Observe(time.Since(start).Seconds())
}
