package ghclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/internal/ghlimit"
)

func comment(t *testing.T, c *github.Client) {
	t.Helper()
	if _, _, err := c.Issues.CreateComment(context.Background(), "acme", "api", 7, &github.IssueComment{Body: github.String("x")}); err != nil {
		t.Fatalf("create comment: %v", err)
	}
}

func TestPace_81stWriteWithinAMinuteWaits(t *testing.T) {
	clock := newFakeClock()
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusCreated, `{}`) })
	c := client(t, ts.URL, "1", Pace(PacePolicy{Clock: clock}))

	for i := 0; i < 80; i++ {
		comment(t, c)
	}
	if len(clock.Sleeps()) != 0 {
		t.Fatalf("the first 80 writes waited %v, want no wait", clock.Sleeps())
	}
	comment(t, c)
	if srv.hits() != 81 || fmt.Sprint(clock.Sleeps()) != "[1m0s]" {
		t.Fatalf("got %d writes, waits %v; want 81 and [1m0s] (until the first leaves the window)", srv.hits(), clock.Sleeps())
	}
}

// A write whose pace wait is longer than what is left of its caller's
// deadline is not waited for: the caller is told at once, unsent, when it
// may go, in the error ghlimit.Lifts reads for GitHub's own rate-limit
// answers, so a job reschedules itself to that time instead of spending
// its deadline on the wait and failing an attempt with "context deadline
// exceeded". A caller whose deadline leaves room for the wait waits and
// sends, as one without a deadline does. The whole stack is used: Retry
// must not repeat the refusal, nor RateLimit hide it.
func TestPace_WaitPastTheCallersDeadlineIsToldAtOnceWhenTheWriteMayGo(t *testing.T) {
	clock := deadlineClock{newFakeClock()}
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusCreated, `{}`) })
	c := client(t, ts.URL, "1", stack(t, Config{Counter: &Counter{}, Clock: clock})...)
	write := func(ctx context.Context, body string) error {
		_, _, err := c.Issues.CreateComment(ctx, "acme", "api", 7, &github.IssueComment{Body: github.String(body)})
		return err
	}

	start := clock.Now()
	for i := 1; i <= 80; i++ {
		if err := write(context.Background(), fmt.Sprintf("comment %d", i)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}

	short, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := write(short, "comment 81, 20s left")
	var paced *ghlimit.PacedError
	if !errors.As(err, &paced) {
		t.Fatalf("the 81st write with 20s left got %v (waits %v), want a *ghlimit.PacedError at once: its pace is a minute", err, clock.Sleeps())
	}
	if srv.hits() != 80 || len(clock.Sleeps()) != 0 || !clock.Now().Equal(start) {
		t.Fatalf("GitHub got %d writes, waits %v; want 80 and none: the write is not sent, the caller not held", srv.hits(), clock.Sleeps())
	}
	if want := start.Add(time.Minute); !paced.At.Equal(want) || paced.Wait != time.Minute {
		t.Errorf("paced until %s (wait %s), want %s, when the first write leaves the minute", paced.At, paced.Wait, want)
	}
	if at, named, limited := ghlimit.Lifts(err, clock.Now()); !limited || !named || !at.Equal(start.Add(time.Minute)) {
		t.Errorf("ghlimit.Lifts = %s, named %v, limited %v; want %s, named, limited: a job snoozes to it",
			at, named, limited, start.Add(time.Minute))
	}

	long, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := write(long, "comment 81, 2m left"); err != nil {
		t.Fatalf("the 81st write with 2m left: %v; want it sent after its minute", err)
	}
	if srv.hits() != 81 || !strings.Contains(srv.body(80), "2m left") || fmt.Sprint(clock.Sleeps()) != "[1m0s]" {
		t.Fatalf("GitHub got %d writes, the last %q, waits %v; want 81, the last the one with 2m left, after [1m0s]",
			srv.hits(), srv.body(srv.hits()-1), clock.Sleeps())
	}
}

// On a StepClock, whose sleeps take no real time, a pace wait cannot
// outlast a caller's (real) deadline: the write waits on the clock and is
// sent, as it was before writes were told to come back. Told to come back
// instead, a job would snooze a real minute for a minute of the clock's
// (the rollback race tests, which pace on one, stopped settling).
func TestPace_OnAStepClockTheWriteWaitsWhateverTheDeadline(t *testing.T) {
	clock := NewStepClock(time.Now())
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusCreated, `{}`) })
	c := client(t, ts.URL, "1", stack(t, Config{Counter: &Counter{}, Clock: clock})...)
	start := clock.Now()
	for i := 1; i <= 81; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, _, err := c.Issues.CreateComment(ctx, "acme", "api", 7, &github.IssueComment{Body: github.String(fmt.Sprint(i))})
		cancel()
		if err != nil {
			t.Fatalf("write %d with 20s left: %v; want it sent after its wait on the step clock", i, err)
		}
	}
	if srv.hits() != 81 || clock.Now().Sub(start) < time.Minute {
		t.Errorf("GitHub got %d writes, the clock moved %s; want 81, after a minute of the clock's", srv.hits(), clock.Now().Sub(start))
	}
}

func TestPace_ReadsAndOtherInstallationsAreNotHeldBack(t *testing.T) {
	clock := newFakeClock()
	_, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusCreated, `{}`) })
	pace := Pace(PacePolicy{Clock: clock})
	one, two := client(t, ts.URL, "1", pace), client(t, ts.URL, "2", pace)

	for i := 0; i < 80; i++ {
		comment(t, one)
	}
	for i := 0; i < 5; i++ {
		if _, _, err := one.Repositories.Get(context.Background(), "acme", "api"); err != nil {
			t.Fatal(err)
		}
	}
	comment(t, two)
	if len(clock.Sleeps()) != 0 {
		t.Fatalf("reads of installation 1 or a write of installation 2 waited %v", clock.Sleeps())
	}
}

// Writers racing for the last slots each check again after waking, so
// however they interleave no minute holds more than 80 writes. The clock
// wakes every sleeper due at the same instant together, as a real one
// would, and moves only when every writer is asleep or done.
func TestPace_ConcurrentWritersNeverPut81InOneMinute(t *testing.T) {
	const writers = 200
	clock := newSteppingClock(writers)
	pc := newPacer(PacePolicy{Clock: clock, Windows: []Window{{Limit: 80, Period: time.Minute}}})
	req, err := http.NewRequest(http.MethodPost, "https://api.github.com/repos/acme/api/issues/7/comments", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "ripcord/test (installation: 1)")

	at := make([]time.Time, writers)
	for i := range at {
		go func() {
			defer clock.finished()
			when, err := pc.wait(req)
			if err != nil {
				t.Error(err)
			}
			at[i] = when
		}()
	}
	clock.run()

	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	for i := 80; i < len(at); i++ {
		if at[i].Sub(at[i-80]) < time.Minute {
			t.Fatalf("writes %d and %d are %v apart: 81 writes within a minute", i-80, i, at[i].Sub(at[i-80]))
		}
	}
	if last := at[len(at)-1].Sub(at[0]); last != 2*time.Minute {
		t.Fatalf("200 writes took %v, want 2m0s (80, 80, then 40)", last)
	}
}

// steppingClock is a fake clock for concurrent sleepers: Sleep blocks until
// the clock reaches the sleeper's wake time, and run moves the clock to the
// earliest wake time whenever every worker is asleep or finished.
type steppingClock struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	wakes   map[*time.Time]bool
	workers int
	done    int
}

func newSteppingClock(workers int) *steppingClock {
	c := &steppingClock{now: newFakeClock().Now(), wakes: map[*time.Time]bool{}, workers: workers}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *steppingClock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	wake := c.now.Add(d)
	c.wakes[&wake] = true
	c.cond.Broadcast()
	for c.now.Before(wake) {
		c.cond.Wait()
	}
	delete(c.wakes, &wake)
	return nil
}

func (c *steppingClock) finished() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done++
	c.cond.Broadcast()
}

func (c *steppingClock) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.done < c.workers {
		if c.done+len(c.wakes) < c.workers || c.anyDue() {
			c.cond.Wait()
			continue
		}
		next := time.Time{}
		for w := range c.wakes {
			if next.IsZero() || w.Before(next) {
				next = *w
			}
		}
		c.now = next
		c.cond.Broadcast()
	}
}

// anyDue reports a sleeper that has been woken and is on its way out of
// Sleep: the workers are not quiet yet.
func (c *steppingClock) anyDue() bool {
	for w := range c.wakes {
		if !c.now.Before(*w) {
			return true
		}
	}
	return false
}

func TestPaceWait(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	burst := func(n int, start time.Time, step time.Duration) []time.Time {
		out := make([]time.Time, n)
		for i := range out {
			out[i] = start.Add(time.Duration(i) * step)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		sent []time.Time
		now  time.Time
		want time.Duration
	}{
		{"the first write goes at once", nil, t0, 0},
		{"the 80th write in a minute goes at once", burst(79, t0, 0), t0, 0},
		{"the 81st write 30s after the first waits the other 30s", burst(80, t0, 0), t0.Add(30 * time.Second), 30 * time.Second},
		{"writes that left the window no longer count", burst(80, t0, 0), t0.Add(time.Minute), 0},
		{"a steady 1/s leaves the 81st free once the first is a minute old", burst(80, t0, time.Second), t0.Add(80 * time.Second), 0},
		{"the 501st write in an hour waits for the hourly window", burst(500, t0, 6*time.Second), t0.Add(3000 * time.Second), 600 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := paceWait(tc.sent, DefaultPaceWindows, tc.now); got != tc.want {
				t.Fatalf("paceWait = %v, want %v", got, tc.want)
			}
		})
	}
}
