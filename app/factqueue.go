package app

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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
	// effects are those of the request's facts, whose alerts are raised
	// once the batch committed (raiseAlerts).
	effects []records.Effect
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
