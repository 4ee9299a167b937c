package ghclient

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ripcord/ripcord/internal/ghlimit"
)

// Defaults for RetryPolicy.
const (
	DefaultRetryAttempts       = 4
	DefaultRetryMaxElapsed     = 30 * time.Second
	DefaultRetryBaseDelay      = 500 * time.Millisecond
	DefaultRetryMaxDelay       = 8 * time.Second
	DefaultRetryAttemptTimeout = 30 * time.Second
)

// RetryPolicy bounds Retry. A zero field takes its default.
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included.
	MaxAttempts int
	// MaxElapsed ends the retries when the next wait would end later than
	// this after the first attempt started.
	MaxElapsed time.Duration
	// BaseDelay is the wait after the first failure; it doubles after each.
	BaseDelay time.Duration
	// MaxDelay caps one wait (a longer Retry-After still counts, bounded by
	// MaxElapsed).
	MaxDelay time.Duration
	// AttemptTimeout bounds one attempt, reading its body included; a
	// negative value means none. It replaces http.Client.Timeout, which
	// would bound all attempts and the waits between them together. It
	// bounds what the middlewares inside Retry do to send the request, not
	// a wait before it is sent: RateLimit's wait for GitHub's limit sits
	// outside Retry, and Pace's, inside, waits on the request's own
	// context and starts the attempt's deadline when it is over.
	AttemptTimeout time.Duration
	Clock          Clock
	// Jitter returns a number in [0,1); tests fix it.
	Jitter func() float64
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultRetryAttempts
	}
	if p.MaxElapsed <= 0 {
		p.MaxElapsed = DefaultRetryMaxElapsed
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultRetryBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultRetryMaxDelay
	}
	if p.AttemptTimeout == 0 {
		p.AttemptTimeout = DefaultRetryAttemptTimeout
	}
	p.Clock = clockOr(p.Clock)
	if p.Jitter == nil {
		p.Jitter = rand.Float64
	}
	return p
}

// Retry repeats a request that failed in a way that may pass, with
// exponential backoff and jitter (honouring a longer Retry-After), at most
// MaxAttempts times, within MaxElapsed and never into a wait that would
// outlast the request's deadline. When it gives up, the caller gets
// the last response or error as it was.
//
// Which requests: GET, HEAD, OPTIONS, PUT and DELETE on 500/502/503/504 and
// transport errors and timeouts; POST and PATCH on those only when no
// connection was made, when marked with Idempotent, or for the workflow
// re-run routes (never a workflow dispatch); any method on 429. The reasons
// are in retry_policy.go. A request body is replayed through GetBody; a
// request without one is not repeated.
func Retry(p RetryPolicy) githubapp.ClientMiddleware {
	p = p.withDefaults()
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			return p.roundTrip(next, req)
		})
	}
}

func (p RetryPolicy) roundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	start := p.Clock.Now()
	route := Route(req.URL.Path)
	marked := markedIdempotent(req.Context())
	for n := 1; ; n++ {
		resp, sent, err := p.try(next, req, n)
		a := attempt{method: req.Method, route: route, marked: marked, err: err, sent: sent}
		if resp != nil {
			a.status = resp.StatusCode
		}
		if n >= p.MaxAttempts || !replayable(req) || !retryable(a) {
			return resp, err
		}
		// A caller that gave up gets its cancellation, not the failure we
		// would otherwise have retried.
		if ctxErr := req.Context().Err(); ctxErr != nil {
			discard(resp)
			return nil, fmt.Errorf("retry %s %s: %w", req.Method, route, ctxErr)
		}
		delay := backoff(p.BaseDelay, p.MaxDelay, n, p.Jitter())
		if resp != nil {
			if ra, ok := ghlimit.RetryAfter(resp.Header, p.Clock.Now()); ok && ra > delay {
				delay = ra
			}
		}
		if p.Clock.Now().Add(delay).Sub(start) > p.MaxElapsed || outlasts(req, delay) {
			return resp, err
		}
		discard(resp)
		if err := p.Clock.Sleep(req.Context(), delay); err != nil {
			return nil, fmt.Errorf("wait %s to retry %s %s: %w", delay, req.Method, route, err)
		}
	}
}

// try sends attempt n of req. sent tells whether a connection was made for
// it, which is all we can know about whether GitHub saw a request that
// failed without a response.
func (p RetryPolicy) try(next http.RoundTripper, req *http.Request, n int) (*http.Response, bool, error) {
	r := req
	if n > 1 {
		var err error
		if r, err = again(req); err != nil {
			return nil, false, err
		}
	}
	ctx := r.Context()
	var sent atomic.Bool
	if !idempotentMethod(r.Method) {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { sent.Store(true) },
		})
	}
	cancel := context.CancelFunc(func() {})
	if p.AttemptTimeout > 0 {
		a := &attemptStart{timeout: p.AttemptTimeout}
		ctx = context.WithValue(ctx, attemptKey{}, a)
		a.ctx = ctx
		ctx, cancel = context.WithTimeout(ctx, p.AttemptTimeout)
	}
	resp, err := roundTripWithin(next, r.WithContext(ctx), cancel)
	return resp, err == nil || sent.Load(), err
}

// roundTripWithin sends req and calls cancel, which ends req's context,
// once GitHub's answer has been read: the context must outlive RoundTrip,
// as go-github reads the body afterwards, so it ends when the body is
// closed (at once when there is no answer).
func roundTripWithin(next http.RoundTripper, req *http.Request, cancel context.CancelFunc) (*http.Response, error) {
	resp, err := next.RoundTrip(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// attemptStart is what an attempt's deadline was set from, kept in the
// attempt's context: a middleware inside Retry that waits before sending
// (Pace) waits on ctx, the request's own context without the attempt's
// deadline, and then starts the attempt's deadline again (sendAfterWait).
// The attempt's deadline is for GitHub's answer; a wait the client takes
// on its own before asking is bounded by the caller's deadline only.
type attemptStart struct {
	ctx     context.Context
	timeout time.Duration
}

type attemptKey struct{}

// waitContext is the context to wait on before sending req: req's own,
// without the deadline of Retry's attempt when it is one.
func waitContext(req *http.Request) context.Context {
	if a, ok := req.Context().Value(attemptKey{}).(*attemptStart); ok {
		return a.ctx
	}
	return req.Context()
}

// sendAfterWait sends req after a wait taken on waitContext: as an attempt
// of Retry, with the attempt's whole deadline from now.
func sendAfterWait(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	a, ok := req.Context().Value(attemptKey{}).(*attemptStart)
	if !ok {
		return next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.timeout)
	return roundTripWithin(next, req.WithContext(ctx), cancel)
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
