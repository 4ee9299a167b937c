package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// deadlockRetries is how often a fact batch runs again after PostgreSQL
// broke a deadlock by aborting it (see factqueue.go for the group commit).
const deadlockRetries = 3

// batchFailedAsOne is logged when a batch runs again fact by fact.
const batchFailedAsOne = "a batch of facts failed as one; running it again fact by fact"

// commitMode is how a batch's facts are applied.
type commitMode int

const (
	// oneBatch reads what every fact of the batch needs in one statement
	// and writes their outcome in one (records.Store.ApplyFacts), and
	// queues their jobs together. PostgreSQL only, where a fact costs its
	// statements: the server may not even wait for a disk at commit.
	oneBatch commitMode = iota
	// factByFact applies the facts one after the other with ApplyFact.
	factByFact
	// requestSavepoints is factByFact with each request under its own
	// savepoint, so that only a failed request's facts are rolled back.
	requestSavepoints
)

// commitFactBatch applies a batch in one durable transaction. The commit
// must finish even if a client hangs up, so no request's context is used.
//
// The first run takes no savepoint: requests rarely fail, and on
// PostgreSQL a savepoint costs a round trip per request. When a run
// fails, the batch runs again fact by fact, and with a savepoint per
// request when it has several, so that only the failed request's facts
// are rolled back (a lone request needs none: its failure is the
// transaction's). A failed run as one batch runs again fact by fact
// whatever failed, so the batch path can never fail what ApplyFact
// would apply.
func (s *Server) commitFactBatch(b *factBatch) {
	// Bounded as the intake's group commit is (commitTimeout).
	ctx, cancel := context.WithTimeout(context.Background(), s.commitTimeout)
	defer cancel()
	mode, deadlocks := factByFact, 0
	if s.db.Dialect == store.Postgres {
		mode = oneBatch
	}
	for {
		err := s.db.InDurableTx(ctx, func(tx *sql.Tx) error {
			return s.applyFactBatch(ctx, tx, b, mode)
		})
		switch {
		case err == nil:
			s.health.ok()
			for _, r := range b.reqs {
				if r.err == nil {
					s.raiseAlerts(r.effects)
				}
			}
			return
		case s.health.failed(err):
			// The database is unavailable: running the batch again, fact
			// by fact, would only fail again. Its requests answer 503.
		case isDeadlock(err) && deadlocks < deadlockRetries:
			deadlocks++
			s.log.Warn("fact batch deadlocked with another writer; running it again", "attempt", deadlocks)
			continue
		case isDeadlock(err): // too often: the batch fails
		case mode == oneBatch:
			// Should the batch path fail what fact by fact applies, this
			// says so; a failed request is the usual reason.
			s.log.Warn(batchFailedAsOne, "requests", len(b.reqs), "error", err)
			mode = factByFact
			if len(b.reqs) > 1 {
				mode = requestSavepoints
			}
			continue
		case mode == factByFact && len(b.reqs) > 1:
			mode = requestSavepoints
			continue
		}
		for _, r := range b.reqs {
			r.results, r.err = nil, err
		}
		return
	}
}

// applyFactBatch locks the clusters the batch names, in one sorted go so
// that batches of different queues that share a cluster never wait on
// each other in a circle, then applies the facts as mode says. The
// oneBatch path takes the locks in its first statement; a batch it cannot
// serve (records.ErrBatchUnsupported) goes fact by fact in the same
// transaction: nothing was written yet.
func (s *Server) applyFactBatch(ctx context.Context, tx *sql.Tx, b *factBatch, mode commitMode) error {
	if mode == oneBatch {
		if done, err := s.applyAsOneBatch(ctx, tx, b); err != nil || done {
			return err
		}
	}
	var clusters []string
	for _, r := range b.reqs {
		for _, f := range r.facts {
			clusters = append(clusters, f.Cluster)
		}
	}
	ctx, err := s.records.LockClusters(ctx, tx, clusters...)
	if err != nil {
		return err
	}
	savepoints := mode == requestSavepoints
	for _, r := range b.reqs {
		r.results, r.err, r.effects = nil, nil, nil // a batch run again starts over
		if savepoints {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT fact_request`); err != nil {
				return fmt.Errorf("savepoint before a request's facts: %w", err)
			}
		}
		results, err := s.applyRequestFacts(ctx, tx, r)
		switch {
		case err == nil:
			r.results = results
		case !savepoints || isDeadlock(err):
			return err
		default:
			if _, rbErr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT fact_request`); rbErr != nil {
				return errors.Join(err, fmt.Errorf("roll back a request's facts: %w", rbErr))
			}
			r.err, r.effects = err, nil
		}
	}
	return nil
}

// applyRequestFacts applies one request's facts in order and queues the
// jobs their effects and changed records call for. A panic fails the
// request: it must not leave the transaction open (on SQLite it holds the
// one writer connection) nor the queue stuck.
func (s *Server) applyRequestFacts(ctx context.Context, tx *sql.Tx, r *factRequest) (_ []factResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic applying facts", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("apply facts: panic: %v", p)
		}
	}()
	results := make([]factResult, len(r.facts))
	var jobs factJobs
	for i, f := range r.facts {
		res, err := s.records.ApplyFact(ctx, tx, f, "", r.now)
		if err != nil {
			return nil, fmt.Errorf("apply fact %d: %w", i, err)
		}
		jobs.add(res)
		results[i] = resultOf(res)
	}
	if err := s.queueFactJobs(ctx, tx, jobs, deployments.Queue); err != nil {
		return nil, err
	}
	r.effects = jobs.effects
	return results, nil
}

// applyAsOneBatch applies every fact of the batch with records.ApplyFacts
// and queues the jobs of all of them in one insert per kind, where
// request by request would spend a statement per request and kind. done
// is false when ApplyFacts cannot serve the batch; it wrote nothing then.
func (s *Server) applyAsOneBatch(ctx context.Context, tx *sql.Tx, b *factBatch) (done bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic applying a batch of facts", "panic", p, "stack", string(debug.Stack()))
			done, err = false, fmt.Errorf("apply facts: panic: %v", p)
		}
	}()
	var facts []records.BatchFact
	for _, r := range b.reqs {
		for _, f := range r.facts {
			facts = append(facts, records.BatchFact{Fact: f, Now: r.now})
		}
	}
	results, err := s.records.ApplyFacts(ctx, tx, facts)
	if errors.Is(err, records.ErrBatchUnsupported) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var jobs factJobs
	for _, r := range b.reqs {
		r.results, r.err, r.effects = make([]factResult, len(r.facts)), nil, nil
		for i := range r.results {
			jobs.add(results[0])
			r.effects = append(r.effects, results[0].Effects...)
			r.results[i] = resultOf(results[0])
			results = results[1:]
		}
	}
	return true, s.queueFactJobs(ctx, tx, jobs, deployments.QueueMany)
}

// factJobs is what applied facts call for beyond the store: their
// effects, the records they changed, and those they opened.
type factJobs struct {
	effects         []records.Effect
	changed, opened []records.Record
}

func (j *factJobs) add(res records.Result) {
	j.effects = append(j.effects, res.Effects...)
	j.changed = append(j.changed, res.Records...)
	if res.Outcome == records.OutcomeOpened && len(res.Records) > 0 {
		j.opened = append(j.opened, res.Records[0])
	}
}

// queueFactJobs queues j's jobs in tx, the deployment syncs through
// queueDeployments (deployments.Queue or QueueMany).
func (s *Server) queueFactJobs(ctx context.Context, tx *sql.Tx, j factJobs,
	queueDeployments func(context.Context, *sql.Tx, *river.Client[*sql.Tx], *slog.Logger, []records.Record) error) error {
	// A release the bundled action opens rolls out like one opened through
	// POST /api/v1/releases (the job leaves environments without rollout:
	// alone). A rollout's own batches name their release, so they open none.
	for _, rec := range j.opened {
		if err := rolloutflow.QueueStart(ctx, tx, s.river, rolloutflow.StartArgs{ReleaseID: rec.ReleaseID}); err != nil {
			return err
		}
	}
	if err := s.queueEffects(ctx, tx, j.effects); err != nil {
		return err
	}
	changed := distinctVersions(j.changed)
	if err := rollbackflow.QueueReleaseChecks(ctx, tx, s.river, changed); err != nil {
		return err
	}
	// A recovery episode that rolled back by pull request or with the agent
	// ends when its rollback release settles.
	if err := recoveryflow.QueueRollbackOutcomes(ctx, tx, s.river, changed); err != nil {
		return err
	}
	return queueDeployments(ctx, tx, s.river, s.log, changed)
}

// distinctVersions is recs without the repeats of a release at an
// updated_at listed before: the jobs of a record's version are queued
// once. River refuses two equal unique jobs in one insert, and the facts
// of one request (or batch) change a record at the same instant.
func distinctVersions(recs []records.Record) []records.Record {
	type version struct {
		id string
		at int64 // the jobs' version
	}
	seen := map[version]bool{}
	out := recs[:0:0]
	for _, r := range recs {
		if v := (version{r.ReleaseID, r.UpdatedAt.UnixMicro()}); !seen[v] {
			seen[v] = true
			out = append(out, r)
		}
	}
	return out
}

// isDeadlock: PostgreSQL aborted the transaction to break a deadlock
// (SQLSTATE 40P01); running it again succeeds.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}
