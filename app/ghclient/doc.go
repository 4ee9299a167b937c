// Package ghclient is the room where ripcord talks HTTP to GitHub. It builds
// installation clients from go-githubapp's ClientCreator and puts a small
// stack of http.RoundTripper middlewares in front of every REST call:
//
//	RateLimit  waits out GitHub's secondary limits (Retry-After) and primary
//	           limit resets (x-ratelimit-reset), up to DefaultRateLimitMaxWait,
//	           and holds back an installation whose primary limit is spent
//	Retry      repeats idempotent calls on 5xx, 429 and transport timeouts,
//	           with exponential backoff and jitter, bounded in attempts and
//	           time; each attempt gets its own deadline (AttemptTimeout)
//	Pace       keeps content-creating calls under GitHub's secondary limit
//	           (80 a minute, 500 an hour per installation) by waiting, or,
//	           when the wait would outlast the caller's deadline, by not
//	           sending and saying when (ghlimit.PacedError)
//	Cache      revalidates GETs with ETags, because a 304 costs no rate limit
//	Metrics    counts every call that reaches GitHub, by route template
//
// The order (outermost first) is the order above. RateLimit sits outside
// Retry because Retry gives each attempt a deadline of its own (30 s): a
// wait for GitHub's limit inside an attempt could never be longer than that,
// and RateLimit does not start a wait that outlasts the request's deadline.
// Outside, it waits up to its MaxWait (90 s) within the caller's own
// deadline, and the request it sends again is a new set of attempts, each
// still cut at 30 s when GitHub does not answer. A retry is paced and
// counted like any other call; Pace's wait, inside an attempt, does not
// count against the attempt's 30 s, which start when Pace lets the write
// go: a write held a minute for the pace is sent then, once. Metrics sits
// innermost so that it sees the 304 that Cache turns back into the cached
// 200 for go-github.
//
// Each middleware is a githubapp.ClientMiddleware, so it composes with
// githubapp.WithClientMiddleware; New wires them all.
package ghclient
