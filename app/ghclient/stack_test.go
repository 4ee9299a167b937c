package ghclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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

// pacedGitHub is a test GitHub whose secondary limit for content-creating
// requests is one write per pace, for all clients of the installation
// together: a write closer than that to the last one it accepted is
// refused, 403 with Retry-After until the pace allows it, and not acted on.
type pacedGitHub struct {
	clock    Clock
	pace     time.Duration
	mu       sync.Mutex
	accepted []time.Time // when each accepted write came
	bodies   []string    // what each accepted write said
	refused  int
}

func (g *pacedGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	if n := len(g.accepted); n > 0 && now.Sub(g.accepted[n-1]) < g.pace {
		g.refused++
		wait := g.accepted[n-1].Add(g.pace).Sub(now)
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		writeJSON(w, http.StatusForbidden, secondaryBody)
		return
	}
	g.accepted = append(g.accepted, now)
	g.bodies = append(g.bodies, string(body))
	writeJSON(w, http.StatusCreated, `{}`)
}

// Pacing is per process: two replicas, each within the pace, write twice
// as fast as GitHub allows the installation. GitHub's refusals are then
// waited out: the refused write is sent again once, after the Retry-After
// GitHub named, and goes through; every write is acted on once, and
// GitHub never gets two closer than its pace. Here GitHub's pace and each
// replica's are one write per 10 s, and the replicas take turns: every
// write after the first comes 10 s early.
func TestStack_TwoReplicasOverThePaceHaveGitHubsRefusalsWaitedOut(t *testing.T) {
	const pace = 10 * time.Second
	clock := newFakeClock()
	gh := &pacedGitHub{clock: clock, pace: pace}
	ts := httptest.NewServer(gh)
	t.Cleanup(ts.Close)
	replica := func() *github.Client {
		mws := stack(t, Config{Counter: &Counter{}, Clock: clock, Pace: PacePolicy{Windows: []Window{{Limit: 1, Period: pace}}}})
		return client(t, ts.URL, "1", mws...)
	}
	replicas := []*github.Client{replica(), replica()}

	const writes = 8
	for i := 0; i < writes; i++ {
		body := github.String(fmt.Sprintf("comment %d", i+1))
		if _, _, err := replicas[i%2].Issues.CreateComment(context.Background(), "acme", "api", 7, &github.IssueComment{Body: body}); err != nil {
			t.Fatalf("write %d, by replica %d: %v; want GitHub's refusal waited out", i+1, i%2+1, err)
		}
	}

	gh.mu.Lock()
	defer gh.mu.Unlock()
	if len(gh.accepted) != writes || gh.refused != writes-1 {
		t.Fatalf("GitHub accepted %d writes and refused %d, want %d and %d (all but the first came early once)",
			len(gh.accepted), gh.refused, writes, writes-1)
	}
	for i, b := range gh.bodies {
		if want := fmt.Sprintf(`"comment %d"`, i+1); !strings.Contains(b, want) {
			t.Errorf("accepted write %d says %s, want %s: each write acted on once, in turn", i+1, b, want)
		}
	}
	for i := 1; i < len(gh.accepted); i++ {
		if d := gh.accepted[i].Sub(gh.accepted[i-1]); d != pace {
			t.Errorf("accepted writes %d and %d came %s apart, want GitHub's pace, %s: each refusal waited out for the Retry-After it named",
				i, i+1, d, pace)
		}
	}
}
