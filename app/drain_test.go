package app

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// More deliveries than one round takes, stored while the drain cannot run,
// must all be processed once it can, each exactly once.
func TestDrainTakesMoreThanOneRoundOfDeliveries(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		ts.drain.Stop() // stored but not drained, as after a crash
		// An event a handler takes: the others are stored finished.
		body := githubtest.LoadPayload(t, "installation", "created.payload.json")
		n := drainLimit + drainLimit/2
		for i := range n {
			if code, resp := ts.deliver(t, "installation", fmt.Sprintf("held-%d", i), body, githubtest.Sign(testSecret, body)); code != 202 {
				t.Fatalf("delivery %d: %d %s", i, code, resp)
			}
		}
		if q := ts.countQueued(t); q != n {
			t.Fatalf("%d deliveries queued with the drain stopped, want %d", q, n)
		}
		d := newDrainer(ts.drain.runner, discardLogger())
		d.Start()
		defer d.Stop()
		waitFor(t, "every delivery to be drained", 30*time.Second, func() bool { return ts.countQueued(t) == 0 })
		var twice int
		if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE processed_count <> 1`).Scan(&twice); err != nil {
			t.Fatal(err)
		}
		if twice != 0 {
			t.Errorf("%d deliveries completed other than once", twice)
		}
	})
}

// A drain job queued by a version that drained through River must complete
// (not fail for want of a worker) and wake the drain.
func TestDrainJobOfAnOlderVersionCompletes(t *testing.T) {
	ts := startServer(t, testdb.URL(t, "sqlite"), Options{})
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
	testdb.Each(t, func(t *testing.T, dbURL string) {
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
		for _, id := range []string{"good-1", "good-2"} {
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
