package ghclient

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ripcord/ripcord/internal/ghlimit"
)

// Window is one of GitHub's secondary limits on content-creating requests:
// at most Limit of them in any Period.
type Window struct {
	Limit  int
	Period time.Duration
}

// DefaultPaceWindows are GitHub's documented secondary limits for
// content-creating requests: 80 a minute and 500 an hour.
var DefaultPaceWindows = []Window{{Limit: 80, Period: time.Minute}, {Limit: 500, Period: time.Hour}}

// PacePolicy configures Pace. Nil Windows take DefaultPaceWindows.
type PacePolicy struct {
	Windows []Window
	Clock   Clock
}

// Pace keeps content-creating requests (POST, PATCH, PUT, DELETE) of each
// scope (installation) within every window, by waiting rather than letting
// GitHub refuse them: a refusal costs a minute, and a client that keeps
// hitting the secondary limit risks the App being blocked. The windows
// slide, so no 60 seconds ever hold more than 80 writes, which a token
// bucket with a burst would allow. Reads pass untouched. A wait ends early
// only with the request's context: inside Retry, the caller's, not the
// attempt's deadline, which starts again when Pace lets the write go (a
// write held a minute would otherwise fail unsent at the attempt's 30 s).
// A wait that would outlast the caller's deadline is not started: the
// write fails at once, unsent, with a *ghlimit.PacedError naming when it
// may go, which ghlimit.Lifts reads like GitHub's own rate-limit answers.
func Pace(p PacePolicy) githubapp.ClientMiddleware {
	pc := newPacer(p)
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if !isWrite(req.Method) {
				return next.RoundTrip(req)
			}
			if _, err := pc.wait(req); err != nil {
				return nil, err
			}
			return sendAfterWait(next, req)
		})
	}
}

func newPacer(p PacePolicy) *pacer {
	if p.Windows == nil {
		p.Windows = DefaultPaceWindows
	}
	pc := &pacer{windows: p.Windows, clock: clockOr(p.Clock), sent: map[string][]time.Time{}}
	for _, w := range p.Windows {
		pc.keep = max(pc.keep, w.Limit)
		pc.longest = max(pc.longest, w.Period)
	}
	return pc
}

type pacer struct {
	windows []Window
	clock   Clock
	keep    int           // the most writes any window looks back on
	longest time.Duration // the longest window
	mu      sync.Mutex
	sent    map[string][]time.Time // scope -> start times of its last writes, oldest first
}

// wait returns once req may be sent, with the time it was let go at, which
// it records. It waits on waitContext(req). Waiters that wake together
// check again, so none of them oversteps a window. A wait longer than
// what is left of that context's deadline is not started: the caller gets
// a *ghlimit.PacedError at once, with the time the write may go, and
// reschedules as it does for GitHub's own rate-limit answers, rather than
// spend its deadline waiting and then fail with it. A caller without a
// deadline waits as long as the pace asks.
func (pc *pacer) wait(req *http.Request) (time.Time, error) {
	scope := Scope(req)
	for {
		pc.mu.Lock()
		now := pc.clock.Now()
		d := paceWait(pc.sent[scope], pc.windows, now)
		if d <= 0 {
			pc.record(scope, now)
			pc.mu.Unlock()
			return now, nil
		}
		pc.mu.Unlock()
		ctx := waitContext(req)
		if left, ok := pc.timeLeft(ctx); ok && left < d && ctx.Err() == nil {
			return time.Time{}, &ghlimit.PacedError{Method: req.Method, Route: Route(req.URL.Path),
				At: now.Add(d), Wait: d, Left: left}
		}
		if err := pc.clock.Sleep(ctx, d); err != nil {
			return time.Time{}, fmt.Errorf("wait %s to pace %s %s under github's secondary limit: %w",
				d, req.Method, Route(req.URL.Path), err)
		}
	}
}

// timeLeft is what is left of ctx's deadline, by the wall clock, as the
// deadline is (outlasts reads it the same way); none when the pacer's
// clock sleeps in no real time (instant), whose waits it cannot outlast.
func (pc *pacer) timeLeft(ctx context.Context) (time.Duration, bool) {
	deadline, ok := ctx.Deadline()
	if _, fake := pc.clock.(instant); !ok || fake {
		return 0, false
	}
	return time.Until(deadline), true
}

func (pc *pacer) record(scope string, now time.Time) {
	times := append(pc.sent[scope], now)
	if len(times) > pc.keep {
		times = times[len(times)-pc.keep:]
	}
	pc.sent[scope] = times
	if len(pc.sent) > 16 {
		for s, t := range pc.sent {
			if now.Sub(t[len(t)-1]) > pc.longest {
				delete(pc.sent, s) // idle longer than any window: nothing to remember
			}
		}
	}
}

// paceWait is how long a write at now must wait so that, counting it, no
// window holds more than its limit. sent are the earlier writes' start
// times, oldest first.
func paceWait(sent []time.Time, windows []Window, now time.Time) time.Duration {
	var wait time.Duration
	for _, w := range windows {
		if w.Limit <= 0 || len(sent) < w.Limit {
			continue
		}
		// The write Limit back from now must have left the window first.
		oldest := sent[len(sent)-w.Limit]
		wait = max(wait, oldest.Add(w.Period).Sub(now))
	}
	return wait
}
