package app

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// factCommitServer is a server that is not serving: the tests call
// commitFacts as the fact handlers do.
func factCommitServer(t *testing.T, engine string) *Server {
	t.Helper()
	srv, err := New(context.Background(), testConfig(testdb.MigratedURL(t, engine)), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.writer.Close()
		srv.close()
	})
	return srv
}

// heldQueue stands for a commit in flight on the queue of facts, so the
// requests submitted meanwhile wait and form the next batch.
type heldQueue struct {
	qs  *factQueues
	key factQueueKey
	q   *factQueue
}

func holdFactQueue(t *testing.T, s *Server, facts []records.Fact) *heldQueue {
	t.Helper()
	key := s.factQueueKey(facts)
	qs := &s.factQueues
	qs.Lock()
	defer qs.Unlock()
	if qs.m == nil {
		qs.m = map[factQueueKey]*factQueue{}
	}
	if qs.m[key] != nil {
		t.Fatal("the queue is in use")
	}
	q := &factQueue{committing: true}
	qs.m[key] = q
	return &heldQueue{qs: qs, key: key, q: q}
}

// submit sends one request and returns once it waits in the queue, so
// requests queue in the order they are submitted.
func (h *heldQueue) submit(s *Server, facts ...records.Fact) <-chan batchAnswer {
	answer := make(chan batchAnswer, 1)
	h.qs.Lock()
	n := len(h.q.waiting)
	h.qs.Unlock()
	go func() {
		results, err := s.commitFacts(facts, time.Now().UTC())
		answer <- batchAnswer{results, err}
	}()
	for queued := n; queued == n; runtime.Gosched() {
		h.qs.Lock()
		queued = len(h.q.waiting)
		h.qs.Unlock()
	}
	return answer
}

// release ends the commit in flight as a committing request does: the
// waiting requests go in one batch.
func (h *heldQueue) release() {
	if next := h.qs.next(h.key, h.q); next != nil {
		next.reqs[0].batch = next
		next.reqs[0].turn <- true
	}
}

type batchAnswer struct {
	results []factResult
	err     error
}

func TestFactBatchAFailedRequestRollsBackOnlyItsOwnFacts(t *testing.T) {
	t.Parallel()
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			s := factCommitServer(t, engine)
			now := time.Now().UTC().Truncate(time.Second)
			for w := range 3 {
				openBenchRelease(t, s, w, now)
			}
			// Four generations of worker 1's workload, in three requests.
			first := benchFact(1, 2, records.PhaseProgressing, now)
			good := benchFact(1, 3, records.PhaseProgressing, now)
			// A time JSON cannot hold: saving the fact fails.
			broken := benchFact(1, 4, records.PhaseProgressing, time.Date(10001, 1, 1, 0, 0, 0, 0, time.UTC))
			last := benchFact(1, 5, records.PhaseHealthy, now.Add(time.Second))

			h := holdFactQueue(t, s, []records.Fact{first})
			a := h.submit(s, first)
			b := h.submit(s, good, broken)
			c := h.submit(s, last)
			h.release()
			if got := <-a; got.err != nil || got.results[0].Outcome != "applied" {
				t.Errorf("the request before the failed one: %+v, %v; want applied", got.results, got.err)
			}
			if got := <-b; got.err == nil {
				t.Errorf("the request with a fact that cannot be saved: %+v, want an error", got.results)
			}
			if got := <-c; got.err != nil || got.results[0].Outcome != "applied" {
				t.Errorf("the request after the failed one: %+v, %v; want applied", got.results, got.err)
			}
			var kept int
			if err := s.db.Read.QueryRow(`SELECT count(*) FROM facts WHERE id = $1`, good.ID()).Scan(&kept); err != nil {
				t.Fatal(err)
			}
			if kept != 0 {
				t.Errorf("the failed request's first fact was kept: its savepoint was not rolled back")
			}
			rec, err := s.records.Get(context.Background(), "bench-1")
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != records.StateHealthy {
				t.Errorf("bench-1 is %s, want healthy (the requests around the failed one committed)", rec.State)
			}
		})
	}
}

func TestFactBatchAppliesOneWorkloadInArrivalOrder(t *testing.T) {
	t.Parallel()
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			s := factCommitServer(t, engine)
			now := time.Now().UTC().Truncate(time.Second)
			openBenchRelease(t, s, 0, now)
			progressing := benchFact(0, 2, records.PhaseProgressing, now)
			healthy := benchFact(0, 3, records.PhaseHealthy, now.Add(time.Second))

			h := holdFactQueue(t, s, []records.Fact{progressing})
			first := h.submit(s, progressing)
			second := h.submit(s, healthy)
			h.release()
			for i, ch := range []<-chan batchAnswer{first, second} {
				if got := <-ch; got.err != nil || got.results[0].Outcome != "applied" {
					t.Errorf("request %d: %+v, %v; want applied", i, got.results, got.err)
				}
			}
			rec, err := s.records.Get(context.Background(), "bench-0")
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != records.StateHealthy {
				t.Errorf("after Progressing then Healthy the release is %s, want healthy", rec.State)
			}
		})
	}
}

func TestFactBatchAnswersARepeatAsDuplicate(t *testing.T) {
	t.Parallel()
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			s := factCommitServer(t, engine)
			now := time.Now().UTC().Truncate(time.Second)
			openBenchRelease(t, s, 0, now)
			f := benchFact(0, 2, records.PhaseProgressing, now)

			h := holdFactQueue(t, s, []records.Fact{f})
			first := h.submit(s, f)
			again := h.submit(s, f)
			h.release()
			want := []string{"applied", "duplicate"}
			for i, ch := range []<-chan batchAnswer{first, again} {
				if got := <-ch; got.err != nil || got.results[0].Outcome != want[i] {
					t.Errorf("copy %d of one fact in one batch: %+v, %v; want %s", i, got.results, got.err, want[i])
				}
			}
		})
	}
}
