// Package ghclient is the room where ripcord talks HTTP to GitHub. It builds
// installation clients from go-githubapp's ClientCreator and puts a small
// stack of http.RoundTripper middlewares in front of every REST call:
//
//	Retry      repeats idempotent calls on 5xx, 429 and transport timeouts,
//	           with exponential backoff and jitter, bounded in attempts and time
//	RateLimit  waits out GitHub's secondary limits (Retry-After) and primary
//	           limit resets (x-ratelimit-reset), and holds back an installation
//	           whose primary limit is spent
//	Pace       keeps content-creating calls under GitHub's secondary limit
//	           (80 a minute, 500 an hour per installation) by waiting
//	Cache      revalidates GETs with ETags, because a 304 costs no rate limit
//	Metrics    counts every call that reaches GitHub, by route template
//
// The order (outermost first) is the order above: a retry is paced and
// counted like any other call, and Metrics sits innermost so that it sees the
// 304 that Cache turns back into the cached 200 for go-github.
//
// Each middleware is a githubapp.ClientMiddleware, so it composes with
// githubapp.WithClientMiddleware; New wires them all.
package ghclient
