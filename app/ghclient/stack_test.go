package ghclient

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
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
