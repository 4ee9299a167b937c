package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/cdevents"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// Record-job defaults.
const (
	sweepInterval = time.Hour
	// sweepKeep is the largest eligibility window a repository may
	// configure (or ?window= may ask for): every record an eligibility
	// check can read outlives the retention period.
	sweepKeep = maxEligibilityWindow
	// stallScanMax is the longest pause between two stall scans;
	// stallScanBatch the releases one scan reads at a time.
	stallScanMax      = time.Minute
	stallScanBatch    = 500
	cdeventAttempts   = 12
	cdeventSendTimout = 10 * time.Second
)

// CDEventArgs delivers one CDEvent to one sink. Key is the effect's
// idempotency key: River refuses a second job with the same arguments, and the
// event id derives from it, so a sink can dedupe a retried delivery.
type CDEventArgs struct {
	Key       string         `json:"key" river:"unique"`
	Sink      string         `json:"sink" river:"unique"`
	Effect    records.Effect `json:"effect"`
	ReleaseID string         `json:"release_id"`
}

// Kind names the job in the queue.
func (CDEventArgs) Kind() string { return "cdevent" }

// StallCheckArgs looks at a release stall_after after it opened.
type StallCheckArgs struct {
	ReleaseID string `json:"release_id" river:"unique"`
}

// Kind names the job in the queue.
func (StallCheckArgs) Kind() string { return "stall_check" }

// StallScanArgs looks for releases that waited stall_after for a first
// fact with no stall alert yet, whoever opened them: only POST
// /api/v1/releases queues a StallCheckArgs timer, while merged release pull
// requests, rollback releases and the rollouts API open records too.
type StallScanArgs struct{}

// Kind names the job in the queue.
func (StallScanArgs) Kind() string { return "stall_scan" }

// SweepArgs deletes finished releases past the retention period.
type SweepArgs struct{}

// Kind names the job in the queue.
func (SweepArgs) Kind() string { return "records_sweep" }

func (s *Server) addRecordWorkers(w *river.Workers) {
	river.AddWorker(w, &cdeventWorker{s: s})
	river.AddWorker(w, &stallWorker{s: s})
	river.AddWorker(w, &stallScanWorker{s: s})
	river.AddWorker(w, &sweepWorker{s: s})
	river.AddWorker(w, &deliverySweepWorker{s: s})
}

func (s *Server) periodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(sweepInterval),
			func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(sweepInterval),
			func() (river.JobArgs, *river.InsertOpts) { return DeliverySweepArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(s.stallScanInterval()),
			func() (river.JobArgs, *river.InsertOpts) { return StallScanArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}),
		recoveryflow.SweepJob(),
		recoveryflow.RetentionJob(),
		clusteractions.SweepJob(),
	}
}

// stallScanInterval is how late, at most, the scan alerts for a release
// that has no timer of its own: a minute, or stall_after when shorter.
func (s *Server) stallScanInterval() time.Duration {
	if d := s.cfg.StallAfter; d > 0 && d < stallScanMax {
		return d
	}
	return stallScanMax
}

// queueEffects turns a reducer's effects into jobs in the same transaction.
func (s *Server) queueEffects(ctx context.Context, tx *sql.Tx, effects []records.Effect) error {
	var jobs []river.InsertManyParams
	for _, e := range effects {
		switch e.Kind {
		case records.EffectCDEvent:
			for _, sink := range s.cfg.CDEventSinks {
				jobs = append(jobs, river.InsertManyParams{
					Args:       CDEventArgs{Key: e.Key, Sink: sink, Effect: e, ReleaseID: e.ReleaseID},
					InsertOpts: &river.InsertOpts{MaxAttempts: cdeventAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}},
				})
			}
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	if _, err := s.river.InsertManyTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("queue %d effects: %w", len(jobs), err)
	}
	return nil
}

// raiseAlerts counts and logs the alerts among effects (the reducer wrote
// their audit events; the recovery capability opens GitHub issues for
// them). Call it once the transaction that queued effects committed: an
// alert raised inside it would be logged and counted for a fact that was
// never stored (the database was unavailable, the batch was rolled back),
// and again when the batch ran once more or the fact was sent again.
func (s *Server) raiseAlerts(effects []records.Effect) {
	for _, e := range effects {
		if e.Kind == records.EffectAlert {
			s.metrics.alerts.WithLabelValues(e.Type).Inc()
			s.log.Warn("alert", "type", e.Type, "release_id", e.ReleaseID, "message", e.Message)
		}
	}
}

// scheduleStallCheck queues the stall timer of a newly opened release.
func (s *Server) scheduleStallCheck(ctx context.Context, tx *sql.Tx, r records.Record) error {
	_, err := s.river.InsertTx(ctx, tx, StallCheckArgs{ReleaseID: r.ReleaseID}, &river.InsertOpts{
		ScheduledAt: r.CreatedAt.Add(s.cfg.StallAfter),
		UniqueOpts:  river.UniqueOpts{ByArgs: true},
	})
	if err != nil {
		return fmt.Errorf("schedule stall check of %s: %w", r.ReleaseID, err)
	}
	return nil
}

type cdeventWorker struct {
	river.WorkerDefaults[CDEventArgs]
	s *Server
}

func (w *cdeventWorker) Work(ctx context.Context, job *river.Job[CDEventArgs]) (err error) {
	defer w.s.metrics.timed(job.Kind, time.Now(), &err)
	rec, err := w.s.records.Get(ctx, job.Args.ReleaseID)
	if err != nil {
		return fmt.Errorf("load release %s: %w", job.Args.ReleaseID, err)
	}
	ev, err := cdevents.Build(job.Args.Effect, rec, w.s.cfg.PublicURL, rec.UpdatedAt)
	if err != nil {
		w.s.metrics.cdevents.WithLabelValues(job.Args.Effect.Type, "rejected").Inc()
		return river.JobCancel(fmt.Errorf("build CDEvent %s: %w", job.Args.Key, err))
	}
	sendCtx, cancel := context.WithTimeout(ctx, cdeventSendTimout)
	defer cancel()
	err = cdevents.Sender{}.Send(sendCtx, job.Args.Sink, ev)
	switch {
	case err == nil:
		w.s.metrics.cdevents.WithLabelValues(job.Args.Effect.Type, "sent").Inc()
		return nil
	case cdevents.Retryable(err):
		w.s.metrics.cdevents.WithLabelValues(job.Args.Effect.Type, "retried").Inc()
		return err
	default:
		w.s.metrics.cdevents.WithLabelValues(job.Args.Effect.Type, "rejected").Inc()
		return river.JobCancel(fmt.Errorf("sink %s refused CDEvent %s: %w", job.Args.Sink, job.Args.Key, err))
	}
}

type stallWorker struct {
	river.WorkerDefaults[StallCheckArgs]
	s *Server
}

func (w *stallWorker) Work(ctx context.Context, job *river.Job[StallCheckArgs]) (err error) {
	defer w.s.metrics.timed(job.Kind, time.Now(), &err)
	rec, err := w.s.records.Get(ctx, job.Args.ReleaseID)
	if errors.Is(err, records.ErrNotFound) {
		return nil // swept or never stored: nothing to watch
	}
	if err != nil {
		return fmt.Errorf("load release %s: %w", job.Args.ReleaseID, err)
	}
	return w.s.checkStall(ctx, job.Args.ReleaseID, w.s.stallAfterFor(ctx, rec.Repository))
}

// checkStall alerts, once, when the release has waited stallAfter (its
// repository's) for a first fact.
func (s *Server) checkStall(ctx context.Context, releaseID string, stallAfter time.Duration) error {
	// A release rolled out in waves waits for its rollout: its first fact
	// may be the rollout's own report of success. The scan looks again.
	now := time.Now().UTC()
	if stallAfter <= 0 {
		stallAfter = records.DefaultStallAfter
	}
	rolling, err := rolloutflow.Rolling(ctx, s.db.Read, releaseID, store.Micros(now.Add(-stallAfter)))
	if err != nil || rolling {
		return err
	}
	var alerts []records.Effect
	err = s.db.InTx(ctx, func(tx *sql.Tx) error {
		alerts = nil
		_, effect, stalled, err := s.records.MarkStalled(ctx, tx, releaseID, now, stallAfter)
		if errors.Is(err, records.ErrNotFound) {
			return nil // swept or never stored: nothing to watch
		}
		if err != nil || !stalled {
			return err
		}
		// A stalled rollback release ends its recovery episode in rollback_failed.
		if err := recoveryflow.QueueRollbackFailed(ctx, tx, s.river, releaseID, effect.Message); err != nil {
			return err
		}
		alerts = []records.Effect{effect}
		return s.queueEffects(ctx, tx, alerts)
	})
	if err == nil {
		s.raiseAlerts(alerts)
	}
	return err
}

type stallScanWorker struct {
	river.WorkerDefaults[StallScanArgs]
	s *Server
}

// Work pages through the releases waiting for a first fact and checks
// those whose repository's stall_after has passed. Each repository's value
// is read once per scan, and not for a release whose rollout is under way.
func (w *stallScanWorker) Work(ctx context.Context, job *river.Job[StallScanArgs]) (err error) {
	defer w.s.metrics.timed(job.Kind, time.Now(), &err)
	now := time.Now().UTC()
	stallAfter := map[string]time.Duration{}
	var after records.StallCandidate
	for {
		page, err := w.s.records.StallCandidates(ctx, now, after, stallScanBatch)
		if err != nil {
			return err
		}
		for _, c := range page {
			// A release whose rollout has not ended waits for it, whatever
			// its stall_after (checkStall): its repository's file is not
			// asked of GitHub, on every scan of a rollout hours long.
			rolling, err := rolloutflow.Rolling(ctx, w.s.db.Read, c.ReleaseID, store.Micros(now))
			if err != nil {
				return err
			}
			if rolling {
				continue
			}
			d, ok := stallAfter[c.Repository]
			if !ok {
				d = w.s.stallAfterFor(ctx, c.Repository)
				stallAfter[c.Repository] = d
			}
			if now.Sub(c.CreatedAt) < d {
				continue
			}
			if err := w.s.checkStall(ctx, c.ReleaseID, d); err != nil {
				return err
			}
		}
		if len(page) < stallScanBatch {
			return nil
		}
		after = page[len(page)-1]
	}
}

type sweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	s *Server
}

func (w *sweepWorker) Work(ctx context.Context, job *river.Job[SweepArgs]) (err error) {
	defer w.s.metrics.timed(job.Kind, time.Now(), &err)
	n, err := w.s.records.Sweep(ctx, time.Now().UTC(), w.s.cfg.Retention, sweepKeep)
	if err != nil {
		return err
	}
	if n > 0 {
		w.s.log.Info("swept finished releases past retention", "deleted", n, "retention", w.s.cfg.Retention)
	}
	return nil
}
