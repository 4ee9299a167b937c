package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// scriptedHandler fails its first failures calls, then succeeds.
type scriptedHandler struct {
	failures int32
	calls    atomic.Int32
}

func (h *scriptedHandler) Handles() []string { return []string{"ping"} }
func (h *scriptedHandler) Handle(context.Context, Delivery) (Commit, error) {
	if n := h.calls.Add(1); n <= h.failures {
		return nil, errors.New("upstream said no")
	}
	return func(context.Context, *sql.Tx) error { return nil }, nil
}

func (ts *testServer) delivery(t *testing.T, id string) Delivery {
	t.Helper()
	var d Delivery
	if code := ts.api(t, "/api/v1/deliveries/"+id, &d); code != 200 {
		t.Fatalf("GET delivery %s: status %d", id, code)
	}
	return d
}

func TestFailingJobIsRetriedThenEndsVisiblyFailed(t *testing.T) {
	t.Parallel()
	body := githubtest.LoadPayload(t, "ping", "payload.json")
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		always := &scriptedHandler{failures: 1 << 30}
		ts := startServer(t, dbURL, Options{Handlers: []EventHandler{always}, DeliveryMaxAttempts: 3, RetryBase: time.Millisecond})
		ts.deliver(t, "ping", "doomed", body, githubtest.Sign(testSecret, body))
		waitFor(t, "the delivery to fail for good", 60*time.Second, func() bool {
			return ts.delivery(t, "doomed").State == DeliveryFailed
		})
		d := ts.delivery(t, "doomed")
		if d.Attempts != 3 || !contains(d.LastError, "upstream said no") {
			t.Errorf("failed delivery shows attempts %d and last_error %q, want 3 and the handler's error", d.Attempts, d.LastError)
		}
		if got := always.calls.Load(); got != 3 {
			t.Errorf("handler called %d times, want 3 (max attempts)", got)
		}
	})
}

func TestFlakyJobSucceedsOnRetry(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		body := githubtest.LoadPayload(t, "ping", "payload.json")
		flaky := &scriptedHandler{failures: 1}
		ts := startServer(t, dbURL, Options{Handlers: []EventHandler{flaky}, RetryBase: time.Millisecond})
		ts.deliver(t, "ping", "flaky", body, githubtest.Sign(testSecret, body))
		waitFor(t, "the delivery to be processed", 60*time.Second, func() bool {
			return ts.delivery(t, "flaky").State == DeliveryProcessed
		})
		if d := ts.delivery(t, "flaky"); d.Attempts != 2 || d.LastError != "" {
			t.Errorf("after one failure and a success: attempts %d, last_error %q; want 2 and empty", d.Attempts, d.LastError)
		}
	})
}

// undecodable fails like a payload that does not decode: no retry can help.
type undecodable struct{ calls atomic.Int32 }

func (h *undecodable) Handles() []string { return []string{"ping"} }
func (h *undecodable) Handle(context.Context, Delivery) (Commit, error) {
	h.calls.Add(1)
	return nil, pipeline.Permanent(errors.New("decode ping event: bad timestamp"))
}

func TestAPermanentErrorFailsTheDeliveryAtOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		body := githubtest.LoadPayload(t, "ping", "payload.json")
		h := &undecodable{}
		ts := startServer(t, dbURL, Options{Handlers: []EventHandler{h}, RetryBase: time.Millisecond})
		ts.deliver(t, "ping", "hopeless", body, githubtest.Sign(testSecret, body))
		waitFor(t, "the delivery to fail", 30*time.Second, func() bool { return ts.delivery(t, "hopeless").State == DeliveryFailed })
		if d := ts.delivery(t, "hopeless"); d.Attempts != 1 || !contains(d.LastError, "bad timestamp") || h.calls.Load() != 1 {
			t.Errorf("a permanent error: attempts %d, calls %d, last_error %q; want one attempt and the error", d.Attempts, h.calls.Load(), d.LastError)
		}
	})
}

// timingOutHandler fails once in the drain; on a retry it fails as a
// handler does whose job ran out of time: the job's context is done by
// the time it returns.
type timingOutHandler struct {
	calls  atomic.Int32
	expire atomic.Pointer[context.CancelFunc]
}

func (h *timingOutHandler) Handles() []string { return []string{"ping"} }
func (h *timingOutHandler) Handle(ctx context.Context, _ Delivery) (Commit, error) {
	h.calls.Add(1)
	if expire := h.expire.Load(); expire != nil {
		(*expire)()
		return nil, fmt.Errorf("ask GitHub: %w", ctx.Err())
	}
	return nil, errors.New("upstream said no")
}

// The last attempt of a delivery that ran out of time (its job's context
// is done) must still leave the delivery failed with its error: River
// discards the job, and nothing would ever try it again.
func TestLastAttemptThatRanOutOfTimeEndsVisiblyFailed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := &timingOutHandler{}
		// The retry job River schedules is an hour away: the test runs the
		// last attempt itself.
		ts := startServer(t, dbURL, Options{Handlers: []EventHandler{h}, DeliveryMaxAttempts: 2, RetryBase: time.Hour})
		body := githubtest.LoadPayload(t, "ping", "payload.json")
		ts.deliver(t, "ping", "slow", body, githubtest.Sign(testSecret, body))
		waitFor(t, "the first attempt to fail", 30*time.Second, func() bool { return ts.delivery(t, "slow").Attempts == 1 })

		ctx, cancel := context.WithCancel(context.Background())
		h.expire.Store(&cancel)
		w := &retryWorker{deliveryRunner: ts.drain.runner}
		job := &river.Job[DeliveryArgs]{JobRow: &rivertype.JobRow{Attempt: 1, Kind: DeliveryArgs{}.Kind()}, Args: DeliveryArgs{DeliveryID: "slow"}}
		if err := w.Work(ctx, job); err == nil {
			t.Fatal("the last attempt reported success")
		}
		d := ts.delivery(t, "slow")
		if d.State != DeliveryFailed || d.Attempts != 2 || !contains(d.LastError, "context canceled") {
			t.Errorf("after its last attempt ran out of time the delivery is %s after %d attempts with last_error %q; want failed after 2 with the error",
				d.State, d.Attempts, d.LastError)
		}
	})
}
