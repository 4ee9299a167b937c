package ghclient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// When a request is repeated
//
// GitHub has no idempotency keys, so a request that may have reached GitHub
// is repeated only when doing it twice cannot do the work twice:
//
//   - GET, HEAD, OPTIONS, PUT and DELETE are repeated on 500, 502, 503, 504
//     and on transport errors and timeouts. A PUT or DELETE that succeeded
//     unseen and is repeated comes back as a conflict or a 404/422 (the file
//     sha moved, the ref is gone, the PR is merged), never as a second change;
//     the caller reconciles by reading the state, as it would after the 5xx.
//   - POST and PATCH are repeated on those failures only when GitHub cannot
//     have seen them (no connection was ever made), when the caller marked
//     the request with Idempotent, or when the route is a re-run of a
//     workflow run or job. GitHub re-runs only a completed run, so a second
//     re-run while the first is queued is refused rather than acted on.
//     A workflow dispatch is NOT repeatable: every accepted dispatch starts
//     another run, and GitHub does answer 5xx or time out after accepting
//     one, so a lost dispatch is the rollout executor's to reconcile (find
//     the run by its inputs) before dispatching again.
//   - 429 is repeated for every method: a request refused for rate limiting
//     was not acted on.
var repeatableRoutes = map[string]bool{
	"/repos/{owner}/{repo}/actions/runs/{run_id}/rerun":             true,
	"/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs": true,
	"/repos/{owner}/{repo}/actions/jobs/{job_id}/rerun":             true,
}

type idempotentKey struct{}

// Idempotent marks the requests made with ctx as safe to send twice, so that
// Retry repeats a POST or PATCH after a 5xx or a timeout too. Use it only for
// a request GitHub would refuse, not repeat, the second time.
func Idempotent(ctx context.Context) context.Context {
	return context.WithValue(ctx, idempotentKey{}, true)
}

func markedIdempotent(ctx context.Context) bool {
	v, _ := ctx.Value(idempotentKey{}).(bool)
	return v
}

// attempt is what retryable decides on: one try of a request and how it
// ended.
type attempt struct {
	method, route string
	marked        bool // the caller used Idempotent
	status        int  // 0 when err is set
	err           error
	sent          bool // a connection was made: GitHub may have seen it
}

func retryable(a attempt) bool {
	safe := idempotentMethod(a.method) || a.marked || repeatableRoutes[a.route]
	if a.err != nil {
		return transient(a.err) && (safe || !a.sent)
	}
	switch a.status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return safe
	}
	return false
}

func idempotentMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// transient reports whether a transport error may go away on its own: a
// timeout, a refused or reset connection, a connection closed mid-response.
// A TLS or URL error will not, and a cancelled context is the caller's
// decision.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// backoff is the wait after the n-th failed attempt (n from 1): base doubled
// per attempt, capped at max, with "equal jitter" (half fixed, half random)
// so that waits still grow while clients spread out. jitter is in [0,1).
func backoff(base, max time.Duration, n int, jitter float64) time.Duration {
	d := max
	if n-1 < 32 && base<<(n-1) > 0 && base<<(n-1) < max {
		d = base << (n - 1)
	}
	return d/2 + time.Duration(jitter*float64(d/2))
}
