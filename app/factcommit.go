package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ripcord/ripcord/app/deployments"
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
// On PostgreSQL, where a commit costs round trips rather than a disk
// flush, requests queue by the clusters they name: batches of different
// clusters commit side by side on their own connections, and each queue
// commits one batch at a time, in arrival order. SQLite has one writer
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
// SQLite; on PostgreSQL the one of the clusters the facts name, sorted.
func (s *Server) factQueueKey(facts []records.Fact) factQueueKey {
	if s.db.Dialect != store.Postgres {
		return ""
	}
	clusters := make([]string, len(facts))
	for i, f := range facts {
		clusters[i] = f.Cluster
	}
	slices.Sort(clusters)
	return factQueueKey(strings.Join(slices.Compact(clusters), "\x00"))
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

// commitFactBatch applies a batch in one durable transaction. The commit
// must finish even if a client hangs up, so no request's context is used.
//
// The first run takes no savepoint: requests rarely fail, and on
// PostgreSQL a savepoint costs a round trip per request. When a request
// fails, the batch runs again with a savepoint per request, so that only
// the failed request's facts are rolled back (a lone request needs none:
// its failure is the transaction's).
func (s *Server) commitFactBatch(b *factBatch) {
	ctx := context.Background()
	savepoints, deadlocks := false, 0
	for {
		err := s.db.InDurableTx(ctx, func(tx *sql.Tx) error {
			return s.applyFactBatch(ctx, tx, b, savepoints)
		})
		switch {
		case err == nil:
			return
		case isDeadlock(err) && deadlocks < deadlockRetries:
			deadlocks++
			s.log.Warn("fact batch deadlocked with another writer; running it again", "attempt", deadlocks)
			continue
		case !savepoints && len(b.reqs) > 1 && !isDeadlock(err):
			savepoints = true
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
// each other in a circle, then applies the requests in order, each under
// its own savepoint when asked.
func (s *Server) applyFactBatch(ctx context.Context, tx *sql.Tx, b *factBatch, savepoints bool) error {
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
	var effects []records.Effect
	var changed, opened []records.Record
	for i, f := range r.facts {
		res, err := s.records.ApplyFact(ctx, tx, f, "", r.now)
		if err != nil {
			return nil, fmt.Errorf("apply fact %d: %w", i, err)
		}
		effects = append(effects, res.Effects...)
		changed = append(changed, res.Records...)
		if res.Outcome == records.OutcomeOpened && len(res.Records) > 0 {
			opened = append(opened, res.Records[0])
		}
		results[i] = resultOf(res)
	}
	// A release the bundled action opens rolls out like one opened through
	// POST /api/v1/releases (the job leaves environments without rollout:
	// alone). A rollout's own batches name their release, so they open none.
	for _, rec := range opened {
		if err := rolloutflow.QueueStart(ctx, tx, s.river, rolloutflow.StartArgs{ReleaseID: rec.ReleaseID}); err != nil {
			return nil, err
		}
	}
	if err := s.queueEffects(ctx, tx, effects); err != nil {
		return nil, err
	}
	if err := rollbackflow.QueueReleaseChecks(ctx, tx, s.river, changed); err != nil {
		return nil, err
	}
	if err := deployments.Queue(ctx, tx, s.river, s.log, changed); err != nil {
		return nil, err
	}
	return results, nil
}

// isDeadlock: PostgreSQL aborted the transaction to break a deadlock
// (SQLSTATE 40P01); running it again succeeds.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}
