// Package oidcauth checks the OIDC tokens GitHub Actions hands to workflow jobs,
// so a job can prove to ripcord which repository, workflow and run it is.
//
// The facts API and the releases API take such a token as the bearer. This room
// only answers "is this token genuine, for us, and current, and what does it
// say"; the HTTP handler decides what the claims allow (the repository claim
// must equal the fact's repository, the App must be installed there).
//
// The verifier never touches the network when it is built, so the server starts
// offline: the issuer's discovery document is fetched (with go-oidc) on the
// first Verify and cached, a failed discovery is retried after a short pause,
// and the issuer's keys are refetched when a signature fails against the
// cached ones (a rotation), at most once per keysRefetchAfter so forged tokens
// cannot make ripcord hammer GitHub.
package oidcauth
