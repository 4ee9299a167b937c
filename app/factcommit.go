package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// Fact requests are applied in group commits, as webhook deliveries are
// stored (groupcommit.go): the requests that arrive while a commit is in
// flight wait and go together in the next durable transaction, so one
// fsync (SQLite) or one commit round trip (PostgreSQL) serves many
// requests. A request that fails rolls back its own facts only: the batch
// then runs again with each request under its own SAVEPOINT, and the
// failed request is answered 500. Answers go back after the commit.
//
// Facts apply in arrival order: a queue commits one batch at a time, and a
// batch applies its requests in the order they queued. On PostgreSQL, a
// batch first takes the advisory locks of every cluster it names, sorted,
// in one statement, so batches of two replicas (or of two queues) cannot
// wait on each other in a circle; a task fact whose record lies in a
// cluster it does not name may still take a lock later, and should that
// deadlock (SQLSTATE 40P01) the batch runs again.
//
// On PostgreSQL, where the server runs every statement but need not wait
// for a disk at commit, a fact costs its statements: a batch is read and
// written in one statement each for all its facts (records.ApplyFacts),
// and its jobs are queued together. Larger batches then cost less per
// fact, so requests spread over a few queues only, by the clusters they
// name: two batches commit side by side on their own connections, one
// being reduced while the other's statements run. SQLite has one writer
// connection and one queue.
//
// There is no writer goroutine: the request that finds no commit in flight
// commits the batch itself, and when it is done it hands the next batch to
// the first request that waited. So an idle server runs nothing, a lone
// request is committed at once, and the server needs nothing to start or
// stop: the queue of a server exists only while it has requests.
const (
	// maxFactRequests bounds one batch. It also bounds the savepoints of
	// one PostgreSQL transaction below 64, the subtransactions a backend
	// tracks before other sessions' snapshots get slower.
	maxFactRequests = 60
	// deadlockRetries is how often a batch runs again after PostgreSQL
	// broke a deadlock by aborting it.
	deadlockRetries = 3
	// postgresFactQueues is how many queues PostgreSQL requests spread
	// over. More queues split the waiting requests into smaller batches,
	// each paying its fixed statements: in BenchmarkFactIngest one or two
	// queues ran at about the same speed, four slower, and eight (a queue
	// per cluster there) at 0.6× for applied facts and 0.5× for repeats.
	postgresFactQueues = 2
)

// factRequest is one request's facts on their way through a group commit.
type factRequest struct {
	facts   []records.Fact
	now     time.Time
	results []factResult
	err     error
	// turn says, once the request was queued, either that its batch is
	// done (false) or that it commits the next batch (true).
	turn  chan bool
	batch *factBatch
}

// factBatch is the requests of one durable transaction, in arrival order.
type factBatch struct{ reqs []*factRequest }

// factQueue is requests waiting for a commit, and whether one is in flight.
type factQueue struct {
	waiting    []*factRequest
	committing bool
}

// factQueueKey names a queue: on PostgreSQL the clusters a request names,
// sorted; on SQLite the one queue ("").
type factQueueKey string

// factQueues are a server's queues that have requests in flight.
type factQueues struct {
	sync.Mutex
	m map[factQueueKey]*factQueue
}

// commitFacts applies one request's facts, in one transaction with the
// facts of the requests that arrive meanwhile, and returns what each did.
// On an error none of the request's facts is applied.
func (s *Server) commitFacts(facts []records.Fact, now time.Time) ([]factResult, error) {
	req := &factRequest{facts: facts, now: now, turn: make(chan bool, 1)}
	key := s.factQueueKey(facts)
	var batch *factBatch
	qs := &s.factQueues
	qs.Lock()
	if qs.m == nil {
		qs.m = map[factQueueKey]*factQueue{}
	}
	q := qs.m[key]
	if q == nil {
		q = &factQueue{}
		qs.m[key] = q
	}
	q.waiting = append(q.waiting, req)
	if !q.committing {
		q.committing = true
		batch = q.take(maxFactRequests)
	}
	qs.Unlock()
	if batch == nil {
		if lead := <-req.turn; !lead {
			return req.results, req.err
		}
		batch = req.batch
	}
	s.commitFactBatch(batch)
	next := qs.next(key, q)
	if next != nil {
		next.reqs[0].batch = next
		next.reqs[0].turn <- true
	}
	for _, r := range batch.reqs {
		if r != req {
			r.turn <- false
		}
	}
	return req.results, req.err
}

// factQueueKey is the queue of a request: the server's only one on
// SQLite; on PostgreSQL one of postgresFactQueues, by the clusters the
// facts name, so requests naming the same clusters keep their order.
func (s *Server) factQueueKey(facts []records.Fact) factQueueKey {
	if s.db.Dialect != store.Postgres {
		return ""
	}
	clusters := make([]string, len(facts))
	for i, f := range facts {
		clusters[i] = f.Cluster
	}
	slices.Sort(clusters)
	h := fnv.New32a()
	h.Write([]byte(strings.Join(slices.Compact(clusters), "\x00")))
	return factQueueKey(strconv.Itoa(int(h.Sum32() % postgresFactQueues)))
}

// take removes the next batch from the queue. Callers hold the queues' lock.
func (q *factQueue) take(n int) *factBatch {
	n = min(n, len(q.waiting))
	b := &factBatch{reqs: q.waiting[:n:n]}
	q.waiting = q.waiting[n:]
	return b
}

// next takes the batch that the requests waiting now form, or ends the
// queue's commits (and the queue) when none is waiting.
func (qs *factQueues) next(key factQueueKey, q *factQueue) *factBatch {
	qs.Lock()
	defer qs.Unlock()
	if len(q.waiting) > 0 {
		return q.take(maxFactRequests)
	}
	q.committing = false
	delete(qs.m, key)
	return nil
}

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
	ctx := context.Background()
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
			return
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
		r.results, r.err = nil, nil // a batch run again starts over
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
			r.err = err
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
		r.results, r.err = make([]factResult, len(r.facts)), nil
		for i := range r.results {
			jobs.add(results[0])
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
