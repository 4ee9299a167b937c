package ghclient

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ripcord/ripcord/internal/ghlimit"
)

// DefaultRateLimitMaxWait is the longest RateLimit holds one request. A
// secondary limit asks for about a minute; a spent primary limit may need
// most of an hour, which is a job to reschedule, not a request to hold.
// Only the caller's own deadline shortens it: Middlewares puts RateLimit
// outside Retry, whose per-attempt deadline (DefaultRetryAttemptTimeout)
// bounds each request sent, not the wait between them.
const DefaultRateLimitMaxWait = 90 * time.Second

// RateLimitPolicy bounds RateLimit. A zero field takes its default.
type RateLimitPolicy struct {
	MaxWait time.Duration
	Clock   Clock
}

// RateLimit waits out GitHub's rate limits. On a 403 or 429 that carries
// Retry-After, or x-ratelimit-remaining 0 with x-ratelimit-reset, or a body
// naming the secondary limit, it waits as long as GitHub asks (at most
// MaxWait, and not at all when the wait would outlast the request's
// context, which gets GitHub's answer instead) and sends the request once
// more: a refused request was not acted on, so this is safe for a POST too.
//
// A response whose x-ratelimit-remaining is 0 also holds back every later
// request of that scope (installation) until the reset: it waits if the
// reset is within MaxWait and otherwise answers at once, without sending,
// with a 403 carrying the same headers, which go-github turns into its usual
// *github.RateLimitError (go-github does the same within one client; this
// extends it to every client of the installation).
func RateLimit(p RateLimitPolicy) githubapp.ClientMiddleware {
	if p.MaxWait <= 0 {
		p.MaxWait = DefaultRateLimitMaxWait
	}
	l := &limiter{maxWait: p.MaxWait, clock: clockOr(p.Clock), resets: map[string]time.Time{}}
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			return l.roundTrip(next, req)
		})
	}
}

type limiter struct {
	maxWait time.Duration
	clock   Clock
	mu      sync.Mutex
	resets  map[string]time.Time // scope -> when its spent primary limit resets
}

func (l *limiter) roundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	scope := Scope(req)
	if reset, ok := l.spent(scope); ok {
		wait := max(reset.Add(ghlimit.ResetMargin).Sub(l.clock.Now()), 0)
		if wait > l.maxWait || outlasts(req, wait) {
			return notSent(req, reset), nil
		}
		if err := l.clock.Sleep(req.Context(), wait); err != nil {
			return nil, fmt.Errorf("wait %s for the github rate limit of %s to reset: %w", wait, scope, err)
		}
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	l.observe(scope, resp.Header)
	wait, limited := l.refusal(resp)
	if !limited || wait > l.maxWait || outlasts(req, wait) || !replayable(req) {
		return resp, nil
	}
	discard(resp)
	if err := l.clock.Sleep(req.Context(), wait); err != nil {
		return nil, fmt.Errorf("wait %s for the github rate limit on %s %s: %w", wait, req.Method, Route(req.URL.Path), err)
	}
	r, err := again(req)
	if err != nil {
		return nil, err
	}
	resp, err = next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	l.observe(scope, resp.Header)
	return resp, nil
}

// outlasts reports whether a wait of d would end after req's deadline. The
// request would then fail with its context, its time spent waiting, and
// the caller would not learn that GitHub asked it to wait: it gets GitHub's
// answer at once instead. The deadline is the wall clock's, as the
// context's is.
func outlasts(req *http.Request, d time.Duration) bool {
	deadline, ok := req.Context().Deadline()
	return ok && time.Until(deadline) < d
}

// refusal decides on resp, reading at most 16 KiB of its body when the
// headers do not decide, and leaves the body whole for the caller.
func (l *limiter) refusal(resp *http.Response) (time.Duration, bool) {
	var body []byte
	if ghlimit.NeedsBody(resp.StatusCode, resp.Header) && resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
	}
	return ghlimit.RefusalWait(resp.StatusCode, resp.Header, body, l.clock.Now())
}

func (l *limiter) observe(scope string, h http.Header) {
	if scope == "" {
		return // an unknown identity must not hold back other requests
	}
	reset, ok := ghlimit.Exhausted(h)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.resets[scope] = reset
}

func (l *limiter) spent(scope string) (time.Time, bool) {
	if scope == "" {
		return time.Time{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	reset, ok := l.resets[scope]
	if ok && !l.clock.Now().Before(reset.Add(ghlimit.ResetMargin)) {
		delete(l.resets, scope)
		return time.Time{}, false
	}
	return reset, ok
}

// notSent is the answer for a request held back because its installation's
// primary limit is spent: shaped like GitHub's own so that go-github reports
// a *github.RateLimitError with the reset time.
func notSent(req *http.Request, reset time.Time) *http.Response {
	body := `{"message":"API rate limit exceeded for this installation; ripcord did not send the request before the reset",` +
		`"documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"}`
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-Ripcord-Not-Sent", "rate limit spent")
	return &http.Response{
		Status:        "403 Forbidden",
		StatusCode:    http.StatusForbidden,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
