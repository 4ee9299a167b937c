package ghclient

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

// In the whole stack a 429 with Retry-After meets both RateLimit and
// Retry; it must be waited out once, not twice.
func TestStack_SecondaryLimitIsWaitedOutOnce(t *testing.T) {
	clock := newFakeClock()
	counter := &Counter{}
	srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "5")
			writeJSON(w, http.StatusTooManyRequests, secondaryBody)
			return
		}
		writeJSON(w, http.StatusOK, `{"full_name":"acme/api"}`)
	})
	c := client(t, ts.URL, "1", stack(t, Config{Counter: counter, Clock: clock})...)

	if _, _, err := c.Repositories.Get(context.Background(), "acme", "api"); err != nil {
		t.Fatalf("get repo: %v", err)
	}
	if srv.hits() != 2 || fmt.Sprint(clock.Sleeps()) != "[5s]" {
		t.Fatalf("got %d requests, waits %v; want 2 and [5s]", srv.hits(), clock.Sleeps())
	}
	if counter.Count("/repos/{owner}/{repo}", "GET", 429) != 1 || counter.Count("/repos/{owner}/{repo}", "GET", 200) != 1 {
		t.Fatalf("counted:\n%s\nwant one 429 and one 200", counter)
	}
}

// deadlines is a transport that remembers how long each request it sends
// has left before its context's deadline (0 when it has none).
type deadlines struct {
	mu   sync.Mutex
	left []time.Duration
	next http.RoundTripper
}

func (d *deadlines) RoundTrip(req *http.Request) (*http.Response, error) {
	var left time.Duration
	if dl, ok := req.Context().Deadline(); ok {
		left = time.Until(dl)
	}
	d.mu.Lock()
	d.left = append(d.left, left)
	d.mu.Unlock()
	return d.next.RoundTrip(req)
}

// A secondary limit asking for longer than one attempt's deadline (30 s)
// but no longer than the 90 s the client holds a request is waited out in
// the whole stack, as documented: the wait is not cut short by the
// attempt's deadline. Each request sent still has its own 30 s, so a
// GitHub that does not answer is still given up on after 30 s.
func TestStack_SecondaryLimitLongerThanAnAttemptIsWaitedOut(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retryAfter int
	}{
		{http.StatusForbidden, 31},
		{http.StatusForbidden, 60},
		{http.StatusForbidden, 90},
		{http.StatusTooManyRequests, 45},
	} {
		t.Run(fmt.Sprintf("%d Retry-After %d", tc.status, tc.retryAfter), func(t *testing.T) {
			clock := newFakeClock()
			srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					w.Header().Set("Retry-After", strconv.Itoa(tc.retryAfter))
					writeJSON(w, tc.status, secondaryBody)
					return
				}
				writeJSON(w, http.StatusOK, `{"full_name":"acme/api"}`)
			})
			sent := &deadlines{next: http.DefaultTransport}
			mws := stack(t, Config{Counter: &Counter{}, Clock: clock})
			c := github.NewClient(&http.Client{Transport: Wrap(sent, mws...)})
			c.BaseURL = mustURL(t, ts.URL+"/")
			c.UserAgent = "ripcord/test (installation: 1)"

			if _, _, err := c.Repositories.Get(context.Background(), "acme", "api"); err != nil {
				t.Fatalf("get repo: %v; want it sent again after %ds", err, tc.retryAfter)
			}
			want := fmt.Sprint([]time.Duration{time.Duration(tc.retryAfter) * time.Second})
			if srv.hits() != 2 || fmt.Sprint(clock.Sleeps()) != want {
				t.Fatalf("got %d requests, waits %v; want 2 and %s", srv.hits(), clock.Sleeps(), want)
			}
			sent.mu.Lock()
			defer sent.mu.Unlock()
			for i, left := range sent.left {
				if left <= 0 || left > DefaultRetryAttemptTimeout {
					t.Errorf("request %d was sent with %s left before its deadline, want at most the attempt's %s",
						i+1, left, DefaultRetryAttemptTimeout)
				}
			}
		})
	}
}

// deadlineClock is fakeClock with a real clock's deadlines: a sleep that
// would outlast its context's deadline (the wall clock's, as every
// context's is) moves the clock to that deadline and fails with it, as
// RealClock's would, only without the wait.
type deadlineClock struct{ *fakeClock }

func (c deadlineClock) Sleep(ctx context.Context, d time.Duration) error {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < d {
			_ = c.fakeClock.Sleep(context.Background(), max(left, 0))
			return context.DeadlineExceeded
		}
	}
	return c.fakeClock.Sleep(ctx, d)
}

// In the whole stack a write that Pace holds longer than one attempt's
// deadline (the 81st write of a burst waits a minute; an attempt has 30 s)
// is sent when its wait is over, once, with an attempt's deadline of its
// own: the wait is the client's, not time GitHub takes to answer. It used
// to fail after 30 s, unsent: the wait ran into the attempt's deadline,
// and Retry, its 30 s in all spent, gave up.
func TestStack_PaceWaitLongerThanAnAttemptIsWaitedOut(t *testing.T) {
	clock := deadlineClock{newFakeClock()}
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusCreated, `{}`) })
	sent := &deadlines{next: http.DefaultTransport}
	c := github.NewClient(&http.Client{Transport: Wrap(sent, stack(t, Config{Counter: &Counter{}, Clock: clock})...)})
	c.BaseURL = mustURL(t, ts.URL+"/")
	c.UserAgent = "ripcord/test (installation: 1)"

	start := clock.Now()
	for i := 1; i <= 81; i++ {
		body := github.String(fmt.Sprintf("comment %d", i))
		if _, _, err := c.Issues.CreateComment(context.Background(), "acme", "api", 7, &github.IssueComment{Body: body}); err != nil {
			t.Fatalf("write %d at +%s: %v; want it sent once the pace allows", i, clock.Now().Sub(start), err)
		}
	}
	if srv.hits() != 81 || !strings.Contains(srv.body(80), `"comment 81"`) {
		t.Fatalf("GitHub got %d writes, the last %q; want 81, each once", srv.hits(), srv.body(srv.hits()-1))
	}
	if waited := clock.Now().Sub(start); waited != time.Minute {
		t.Errorf("the writes took %s (waits %v), want 1m0s: the 81st waits for the first to leave the window", waited, clock.Sleeps())
	}
	sent.mu.Lock()
	defer sent.mu.Unlock()
	if left := sent.left[len(sent.left)-1]; left <= 0 || left > DefaultRetryAttemptTimeout {
		t.Errorf("the 81st write was sent with %s left before its deadline, want an attempt's %s", left, DefaultRetryAttemptTimeout)
	}
}
