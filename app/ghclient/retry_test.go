package ghclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

func retryFor(clock Clock) RetryPolicy {
	return RetryPolicy{Clock: clock, Jitter: func() float64 { return 0 }}
}

func TestRetry_ServerErrorThenSuccessIsRetried(t *testing.T) {
	clock := newFakeClock()
	srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			writeJSON(w, http.StatusBadGateway, `{"message":"Server Error"}`)
			return
		}
		writeJSON(w, http.StatusOK, `{"full_name":"acme/api"}`)
	})
	c := client(t, ts.URL, "1", Retry(retryFor(clock)))

	repo, _, err := c.Repositories.Get(context.Background(), "acme", "api")
	if err != nil {
		t.Fatalf("get repo: %v", err)
	}
	if repo.GetFullName() != "acme/api" || srv.hits() != 2 {
		t.Fatalf("got %q after %d requests, want acme/api after 2", repo.GetFullName(), srv.hits())
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != DefaultRetryBaseDelay/2 {
		t.Fatalf("waits %v, want one of %v (base delay, zero jitter)", got, DefaultRetryBaseDelay/2)
	}
}

// A POST that reached GitHub and got a 5xx may have been acted on: creating
// the comment twice is worse than reporting the error.
func TestRetry_PostIsNotRetriedAfterTheServerSawIt(t *testing.T) {
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusBadGateway, `{"message":"Server Error"}`)
	})
	c := client(t, ts.URL, "1", Retry(retryFor(newFakeClock())))

	_, resp, err := c.Issues.CreateComment(context.Background(), "acme", "api", 7, &github.IssueComment{Body: github.String("hi")})
	if err == nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("want the 502 back, got resp=%v err=%v", resp, err)
	}
	if srv.hits() != 1 {
		t.Fatalf("server saw the comment %d times, want 1", srv.hits())
	}
}

// A workflow dispatch is the case that matters most: each accepted dispatch
// starts a deploy.
func TestRetry_DispatchIsNotRetriedButRerunIs(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(*github.Client) error
		want int
	}{
		{"dispatch answered 502 is not sent again", func(c *github.Client) error {
			_, err := c.Actions.CreateWorkflowDispatchEventByFileName(context.Background(), "acme", "api", "deploy.yml",
				github.CreateWorkflowDispatchEventRequest{Ref: "main"})
			return err
		}, 1},
		{"rerun-failed-jobs answered 502 is sent again", func(c *github.Client) error {
			_, err := c.Actions.RerunFailedJobsByID(context.Background(), "acme", "api", 42)
			return err
		}, 2},
		{"POST marked Idempotent is sent again", func(c *github.Client) error {
			_, _, err := c.Issues.CreateComment(Idempotent(context.Background()), "acme", "api", 7, &github.IssueComment{Body: github.String("x")})
			return err
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					writeJSON(w, http.StatusBadGateway, `{"message":"Server Error"}`)
					return
				}
				writeJSON(w, http.StatusCreated, `{}`)
			})
			c := client(t, ts.URL, "1", Retry(retryFor(newFakeClock())))
			err := tc.call(c)
			if srv.hits() != tc.want {
				t.Fatalf("server saw %d requests (err %v), want %d", srv.hits(), err, tc.want)
			}
		})
	}
}

// refuseFirstDial fails the first request before any connection exists,
// like a refused dial, and sends the rest.
type refuseFirstDial struct {
	n    int
	next http.RoundTripper
}

func (r *refuseFirstDial) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n++
	if r.n == 1 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return r.next.RoundTrip(req)
}

func TestRetry_PostIsRetriedWhenNothingWasSent(t *testing.T) {
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusCreated, `{"id":1}`)
	})
	hc := &http.Client{Transport: Wrap(&refuseFirstDial{next: http.DefaultTransport}, Retry(retryFor(newFakeClock())))}
	c := github.NewClient(hc)
	c.BaseURL = mustURL(t, ts.URL+"/")

	if _, _, err := c.Issues.CreateComment(context.Background(), "acme", "api", 7, &github.IssueComment{Body: github.String("once")}); err != nil {
		t.Fatalf("create comment: %v", err)
	}
	if srv.hits() != 1 || !strings.Contains(srv.body(0), `"body":"once"`) {
		t.Fatalf("server saw %d requests, first body %q; want the comment once, body intact", srv.hits(), srv.body(0))
	}
}

func TestRetry_TimedOutAttemptIsRetried(t *testing.T) {
	srv, ts := serve(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			<-r.Context().Done() // hang until the client gives up
			return
		}
		writeJSON(w, http.StatusOK, `{"full_name":"acme/api"}`)
	})
	p := retryFor(newFakeClock())
	p.AttemptTimeout = 50 * time.Millisecond
	c := client(t, ts.URL, "1", Retry(p))

	if _, _, err := c.Repositories.Get(context.Background(), "acme", "api"); err != nil {
		t.Fatalf("get repo: %v", err)
	}
	if srv.hits() != 2 {
		t.Fatalf("server saw %d requests, want 2", srv.hits())
	}
}

func TestRetry_GivesUpAfterMaxAttempts(t *testing.T) {
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusServiceUnavailable, `{"message":"unavailable"}`)
	})
	clock := newFakeClock()
	c := client(t, ts.URL, "1", Retry(retryFor(clock)))

	_, resp, err := c.Repositories.Get(context.Background(), "acme", "api")
	if err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("want the last 503 back, got %v", err)
	}
	if srv.hits() != DefaultRetryAttempts {
		t.Fatalf("server saw %d requests, want %d", srv.hits(), DefaultRetryAttempts)
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	if fmt.Sprint(clock.Sleeps()) != fmt.Sprint(want) {
		t.Fatalf("waits %v, want doubling %v", clock.Sleeps(), want)
	}
}

func TestRetry_RetryAfterLongerThanTheBudgetEndsRetries(t *testing.T) {
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		writeJSON(w, http.StatusServiceUnavailable, `{"message":"unavailable"}`)
	})
	clock := newFakeClock()
	c := client(t, ts.URL, "1", Retry(retryFor(clock)))

	_, _, err := c.Repositories.Get(context.Background(), "acme", "api")
	if err == nil || srv.hits() != 1 || len(clock.Sleeps()) != 0 {
		t.Fatalf("want one request and no wait past the %s budget; got %d requests, waits %v, err %v",
			DefaultRetryMaxElapsed, srv.hits(), clock.Sleeps(), err)
	}
}

func TestRetry_CancelledContextStopsTheWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		cancel()
		writeJSON(w, http.StatusBadGateway, `{}`)
	})
	c := client(t, ts.URL, "1", Retry(retryFor(newFakeClock())))

	_, _, err := c.Repositories.Get(ctx, "acme", "api")
	if !errors.Is(err, context.Canceled) || srv.hits() != 1 {
		t.Fatalf("want context.Canceled after 1 request, got %v after %d", err, srv.hits())
	}
}

func TestRetryable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	rerun := "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun"
	for _, tc := range []struct {
		name string
		a    attempt
		want bool
	}{
		{"GET answered 502", attempt{method: "GET", status: 502}, true},
		{"GET answered 500", attempt{method: "GET", status: 500}, true},
		{"GET answered 501 (will not change)", attempt{method: "GET", status: 501}, false},
		{"GET answered 404", attempt{method: "GET", status: 404}, false},
		{"GET answered 403 (RateLimit's business)", attempt{method: "GET", status: 403}, false},
		{"PUT contents answered 503", attempt{method: "PUT", status: 503}, true},
		{"DELETE ref answered 504", attempt{method: "DELETE", status: 504}, true},
		{"POST comment answered 502", attempt{method: "POST", status: 502}, false},
		{"PATCH check run answered 500", attempt{method: "PATCH", status: 500}, false},
		{"POST answered 429 was not acted on", attempt{method: "POST", status: 429}, true},
		{"POST re-run answered 502", attempt{method: "POST", route: rerun, status: 502}, true},
		{"POST dispatch answered 502", attempt{method: "POST", route: "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", status: 502}, false},
		{"POST marked idempotent answered 502", attempt{method: "POST", marked: true, status: 502}, true},
		{"POST refused dial, nothing sent", attempt{method: "POST", err: refused}, true},
		{"POST timed out after connecting", attempt{method: "POST", err: context.DeadlineExceeded, sent: true}, false},
		{"GET timed out after connecting", attempt{method: "GET", err: context.DeadlineExceeded, sent: true}, true},
		{"GET connection reset", attempt{method: "GET", err: fmt.Errorf("read: %w", syscall.ECONNRESET), sent: true}, true},
		{"GET cancelled by the caller", attempt{method: "GET", err: context.Canceled}, false},
		{"GET with a bad certificate", attempt{method: "GET", err: errors.New("x509: certificate signed by unknown authority")}, false},
		{"GET cut off mid-body", attempt{method: "GET", err: io.ErrUnexpectedEOF, sent: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryable(tc.a); got != tc.want {
				t.Fatalf("retryable(%+v) = %v, want %v", tc.a, got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	base, maxDelay := 500*time.Millisecond, 8*time.Second
	for _, tc := range []struct {
		name   string
		n      int
		jitter float64
		want   time.Duration
	}{
		{"first wait, no jitter, is half the base", 1, 0, 250 * time.Millisecond},
		{"first wait, most jitter, nearly the base", 1, 0.999, 250*time.Millisecond + 249750*time.Microsecond},
		{"third wait doubles twice", 3, 0, time.Second},
		{"tenth wait is capped", 10, 0, 4 * time.Second},
		{"a huge attempt number does not overflow", 80, 0.5, 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := backoff(base, maxDelay, tc.n, tc.jitter); got != tc.want {
				t.Fatalf("backoff(n=%d, jitter=%v) = %v, want %v", tc.n, tc.jitter, got, tc.want)
			}
		})
	}
}

func TestRetry_WaitPastTheDeadlineEndsRetries(t *testing.T) {
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "20")
		writeJSON(w, http.StatusServiceUnavailable, `{"message":"unavailable"}`)
	})
	clock := newFakeClock()
	c := client(t, ts.URL, "1", Retry(retryFor(clock)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	_, resp, err := c.Repositories.Get(ctx, "acme", "api")
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || srv.hits() != 1 || len(clock.Sleeps()) != 0 {
		t.Fatalf("want the 503 back at once, not a wait past the deadline; got %d requests, waits %v, err %v", srv.hits(), clock.Sleeps(), err)
	}
}
