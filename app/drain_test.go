package app

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// More deliveries than one round takes, stored while the drain cannot run,
// must all be processed once it can, each exactly once.
func TestDrainTakesMoreThanOneRoundOfDeliveries(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		n := drainLimit + drainLimit/2
		ts.holdDeliveries(t, "held", n) // stored but not drained, as after a crash
		if q := ts.countQueued(t); q != n {
			t.Fatalf("%d deliveries queued with the drain stopped, want %d", q, n)
		}
		d := newDrainer(ts.drain.runner, nil, discardLogger())
		d.Start()
		defer d.Stop(context.Background())
		waitFor(t, "every delivery to be drained", 30*time.Second, func() bool { return ts.countQueued(t) == 0 })
		ts.checkCompletedOnce(t)
	})
}

// A drain job queued by a version that drained through River must complete
// (not fail for want of a worker) and wake the drain.
func TestDrainJobOfAnOlderVersionCompletes(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	res, err := ts.river.Insert(context.Background(), DeliveryBatchArgs{}, &river.InsertOpts{Queue: drainQueue})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the old drain job to complete", 20*time.Second, func() bool {
		var state string
		if err := ts.db.Read.QueryRow(`SELECT state FROM river_job WHERE id = $1`, res.Job.ID).Scan(&state); err != nil {
			t.Fatal(err)
		}
		return state == "completed"
	})
}

func (ts *testServer) countQueued(t *testing.T) int {
	t.Helper()
	var n int
	if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE state = 'queued'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// holdDeliveries stops ts's drain and stores n installation deliveries,
// ids prefix-0 to prefix-(n-1), which stay queued: an event a handler
// takes (the others are stored finished).
func (ts *testServer) holdDeliveries(t *testing.T, prefix string, n int) {
	t.Helper()
	ts.drain.Stop(context.Background())
	body := githubtest.LoadPayload(t, "installation", "created.payload.json")
	for i := range n {
		if code, resp := ts.deliver(t, "installation", fmt.Sprintf("%s-%d", prefix, i), body, githubtest.Sign(testSecret, body)); code != 202 {
			t.Fatalf("delivery %d: %d %s", i, code, resp)
		}
	}
}

// checkCompletedOnce fails the test for every delivery completed other
// than once.
func (ts *testServer) checkCompletedOnce(t *testing.T) {
	t.Helper()
	var other int
	if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE processed_count <> 1`).Scan(&other); err != nil {
		t.Fatal(err)
	}
	if other != 0 {
		t.Errorf("%d deliveries completed other than once", other)
	}
}

// panicHandler's commit panics for deliveries of the hook with id 1; the
// others commit.
type panicHandler struct{}

func (panicHandler) Handles() []string { return []string{"ping"} }
func (panicHandler) Handle(_ context.Context, d Delivery) (Commit, error) {
	return func(context.Context, *sql.Tx) error {
		if d.ID == "bad" {
			panic("a bug in a commit")
		}
		return nil
	}, nil
}

// A commit that panics fails its own delivery, which ends failed with the
// panic as its error; the drain and the deliveries beside it go on.
func TestCommitThatPanicsFailsItsDeliveryOnly(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{Handlers: []EventHandler{panicHandler{}}, DeliveryMaxAttempts: 2, RetryBase: time.Millisecond})
		body := githubtest.LoadPayload(t, "ping", "payload.json")
		for _, id := range []string{"good-1", "bad", "good-2"} {
			if code, resp := ts.deliver(t, "ping", id, body, githubtest.Sign(testSecret, body)); code != 202 {
				t.Fatalf("delivery %s: %d %s", id, code, resp)
			}
		}
		waitFor(t, "the panicking delivery to fail for good", 30*time.Second, func() bool {
			return ts.delivery(t, "bad").State == DeliveryFailed
		})
		if d := ts.delivery(t, "bad"); !strings.Contains(d.LastError, "commit panicked: a bug in a commit") {
			t.Errorf("failed delivery's last_error = %q, want the panic", d.LastError)
		}
		// good-2 may go in a round after the one that failed "bad" for
		// good: wait for both, however the rounds fell.
		for _, id := range []string{"good-1", "good-2"} {
			waitFor(t, "delivery "+id+" beside the panicking one to be processed", 30*time.Second, func() bool {
				return ts.delivery(t, id).State != DeliveryQueued
			})
			if d := ts.delivery(t, id); d.State != DeliveryProcessed {
				t.Errorf("delivery %s beside the panicking one ended %q (%s), want processed", id, d.State, d.LastError)
			}
		}
		// The drain still works after the panic.
		if code, _ := ts.deliver(t, "ping", "good-3", body, githubtest.Sign(testSecret, body)); code != 202 {
			t.Fatal("a delivery after the panic was refused")
		}
		waitFor(t, "a delivery after the panic to be processed", 30*time.Second, func() bool {
			return ts.delivery(t, "good-3").State == DeliveryProcessed
		})
	})
}

// Replicas sharing a PostgreSQL database drain it side by side: each round
// takes deliveries no other round holds, so none is decided twice (a
// handler may ask GitHub, whose rate limit the replicas share) and no
// round is thrown away because another claimed its deliveries first.
func TestReplicasDrainDifferentDeliveries(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "postgres"), Options{})
	n := 2 * drainLimit
	ts.holdDeliveries(t, "replica", n)
	h := &countingHandler{decided: map[string]int{}}
	queued := func() (int, error) {
		var q int
		err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE state = 'queued'`).Scan(&q)
		return q, err
	}
	var wg sync.WaitGroup
	for replica := range 2 {
		r := *ts.drain.runner
		r.handlers = map[string][]EventHandler{"installation": {h}}
		wg.Go(func() {
			for {
				q, err := queued()
				if err != nil || q == 0 {
					if err != nil {
						t.Error(err)
					}
					return
				}
				if _, err := r.drainOnce(context.Background(), context.Background()); err != nil {
					t.Errorf("replica %d: %v", replica, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(h.decided) != n {
		t.Errorf("%d deliveries decided, want %d", len(h.decided), n)
	}
	for id, times := range h.decided {
		if times != 1 {
			t.Errorf("delivery %s decided %d times, want once", id, times)
		}
	}
	ts.checkCompletedOnce(t)
}

// countingHandler counts how often each delivery is decided. It takes a
// moment per delivery, as a handler that asks GitHub does, and returns a
// commit for every other delivery, so that both ways a round completes
// deliveries (with commits, and without) are used.
type countingHandler struct {
	mu      sync.Mutex
	decided map[string]int
}

func (*countingHandler) Handles() []string { return []string{"installation"} }

func (h *countingHandler) Handle(_ context.Context, d Delivery) (Commit, error) {
	time.Sleep(time.Millisecond)
	h.mu.Lock()
	h.decided[d.ID]++
	h.mu.Unlock()
	if strings.ContainsAny(d.ID[len(d.ID)-1:], "02468") {
		return func(context.Context, *sql.Tx) error { return nil }, nil
	}
	return nil, nil
}

// A PostgreSQL server may end transactions that idle too long
// (idle_in_transaction_session_timeout); a drain round idles while its
// handlers ask GitHub, and must not be ended for it.
func TestDrainRoundOutlivesAShortIdleTimeout(t *testing.T) {
	t.Parallel()
	dbURL := testdb.MigratedURL(t, "postgres")
	ts := startServer(t, dbURL, Options{})
	ts.holdDeliveries(t, "slow", 1)
	// Only the round's own connections get the short timeout: the
	// server's other connections keep the database's default.
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("options", "-c idle_in_transaction_session_timeout=100ms")
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads + as itself
	r := *ts.drain.runner
	r.db = testdb.Open(t, u.String())
	var timeout string
	if err := r.db.Write.QueryRow(`SHOW idle_in_transaction_session_timeout`).Scan(&timeout); err != nil {
		t.Fatal(err)
	}
	if timeout != "100ms" {
		t.Fatalf("the round's connections have idle_in_transaction_session_timeout %q, want 100ms", timeout)
	}
	r.handlers = map[string][]EventHandler{"installation": {slowHandler{300 * time.Millisecond}}}
	n, err := r.drainOnce(context.Background(), context.Background())
	if err != nil {
		t.Fatalf("drain round: %v", err)
	}
	if n != 1 {
		t.Fatalf("drained %d deliveries, want 1", n)
	}
	var state string
	if err := ts.db.Read.QueryRow(`SELECT state FROM deliveries WHERE id = 'slow-0'`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "processed" {
		t.Errorf("delivery is %s, want processed", state)
	}
}

// slowHandler takes its time to decide, as one waiting on GitHub does.
type slowHandler struct{ took time.Duration }

func (slowHandler) Handles() []string { return []string{"installation"} }

func (h slowHandler) Handle(context.Context, Delivery) (Commit, error) {
	time.Sleep(h.took)
	return func(context.Context, *sql.Tx) error { return nil }, nil
}

// A replica that dies in the middle of a PostgreSQL drain round lets go of
// the deliveries it took when its connection goes, and another replica
// takes them at once, not after some lease.
func TestDrainRoundOfADeadReplicaIsTakenOver(t *testing.T) {
	t.Parallel()
	dbURL := testdb.MigratedURL(t, "postgres")
	ts := startServer(t, dbURL, Options{})
	const n = 20
	ts.holdDeliveries(t, "orphan", n)
	// Replica A, on connections of its own, takes the deliveries and
	// stops in its handler, as one waiting on GitHub would.
	a := *ts.drain.runner
	a.db = testdb.Open(t, dbURL)
	stuck := &blockingHandler{entered: make(chan struct{}, n), release: make(chan struct{})}
	a.handlers = map[string][]EventHandler{"installation": {stuck}}
	aDone := make(chan error, 1)
	go func() {
		_, err := a.drainOnce(context.Background(), context.Background())
		aDone <- err
	}()
	<-stuck.entered
	// Replica B finds nothing to take while A holds them.
	b := *ts.drain.runner
	b.handlers = map[string][]EventHandler{"installation": {&countingHandler{decided: map[string]int{}}}}
	if got, err := b.drainOnce(context.Background(), context.Background()); err != nil || got != 0 {
		t.Fatalf("while another round holds them, a round took %d deliveries (err %v), want 0", got, err)
	}
	// A dies: its server ends the connection that holds the locks (and,
	// with a timeout, waits until that backend is gone).
	var killed int
	if err := ts.db.Write.QueryRow(`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'idle in transaction' AND query LIKE '%FOR UPDATE SKIP LOCKED%'`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d drain connections, want 1", killed)
	}
	counter := &countingHandler{decided: map[string]int{}}
	b.handlers = map[string][]EventHandler{"installation": {counter}}
	got, err := b.drainOnce(context.Background(), context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != n || len(counter.decided) != n {
		t.Errorf("after the other replica died, a round took %d deliveries and decided %d, want %d", got, len(counter.decided), n)
	}
	close(stuck.release)
	if err := <-aDone; err == nil {
		t.Error("the dead replica's round reported success")
	}
	ts.checkCompletedOnce(t)
}

// blockingHandler says it was entered, then waits to be released.
type blockingHandler struct {
	entered chan struct{}
	release chan struct{}
}

func (*blockingHandler) Handles() []string { return []string{"installation"} }

func (h *blockingHandler) Handle(context.Context, Delivery) (Commit, error) {
	h.entered <- struct{}{}
	<-h.release
	return func(context.Context, *sql.Tx) error { return nil }, nil
}

// hangingHandler decides at once, except for the delivery hang, whose
// handler waits until its context is done, as one waiting on a GitHub
// that does not answer.
type hangingHandler struct{ hang string }

func (hangingHandler) Handles() []string { return []string{"installation"} }

func (h hangingHandler) Handle(ctx context.Context, d Delivery) (Commit, error) {
	if d.ID == h.hang {
		<-ctx.Done()
		return nil, fmt.Errorf("ask GitHub: %w", ctx.Err())
	}
	return func(context.Context, *sql.Tx) error { return nil }, nil
}

// A handler that outlasts the round's timeout fails its own delivery,
// which is retried later; the round still completes the others. A round
// that could not store its results would take the same deliveries again,
// and time out again, for ever.
func TestDrainRoundThatRunsOutOfTimeStillCompletes(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{RetryBase: time.Hour})
		ts.holdDeliveries(t, "late", 2)
		r := *ts.drain.runner
		r.handlers = map[string][]EventHandler{"installation": {hangingHandler{hang: "late-0"}}}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		n, err := r.drainOnce(ctx, context.Background())
		if err != nil || n != 2 {
			t.Fatalf("a round whose handler ran out of time: took %d, err %v; want 2 and no error", n, err)
		}
		if d := ts.delivery(t, "late-0"); d.State != DeliveryQueued || d.Attempts != 1 || !contains(d.LastError, "deadline exceeded") {
			t.Errorf("the delivery that ran out of time is %s after %d attempts (%q), want queued for its retry after 1 with the error",
				d.State, d.Attempts, d.LastError)
		}
		if d := ts.delivery(t, "late-1"); d.State != DeliveryProcessed {
			t.Errorf("the delivery beside it is %s (%s), want processed", d.State, d.LastError)
		}
		var retries int
		if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM river_job WHERE kind = 'delivery'`).Scan(&retries); err != nil {
			t.Fatal(err)
		}
		if retries != 1 {
			t.Errorf("%d retry jobs queued, want 1", retries)
		}
	})
}
