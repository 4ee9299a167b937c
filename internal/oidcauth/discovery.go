package oidcauth

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// lazyKeys finds the issuer's key set through go-oidc's discovery on first
// use, so that building a Verifier needs no network.
type lazyKeys struct {
	issuer string
	client *http.Client
	now    func() time.Time

	ready atomic.Pointer[keySet]

	// turn lets one caller discover at a time; it is a channel rather than a
	// mutex so that waiting callers can give up when their request ends.
	turn     chan struct{}
	failedAt time.Time // guarded by turn
	failure  error     // guarded by turn; nil after a success
}

func newLazyKeys(issuer string, client *http.Client, now func() time.Time) *lazyKeys {
	return &lazyKeys{issuer: issuer, client: client, now: now, turn: make(chan struct{}, 1)}
}

func (l *lazyKeys) get(ctx context.Context) (*keySet, error) {
	if ks := l.ready.Load(); ks != nil {
		return ks, nil
	}
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, failWith(ErrIssuerUnavailable, "waiting for discovery of issuer "+l.issuer, ctx.Err())
	}
	defer func() { <-l.turn }()
	if ks := l.ready.Load(); ks != nil {
		return ks, nil
	}

	now := l.now()
	if l.failure != nil && now.Sub(l.failedAt) < discoveryRetryAfter {
		msg := fmt.Sprintf("issuer %s could not be discovered %s ago; next try after %s",
			l.issuer, now.Sub(l.failedAt).Round(time.Second), discoveryRetryAfter)
		return nil, failWith(ErrIssuerUnavailable, msg, l.failure)
	}
	ks, err := l.discover(ctx)
	if err != nil {
		// A caller that hung up says nothing about the issuer: no pause for it.
		if ctx.Err() == nil {
			l.failedAt, l.failure = now, err
		}
		return nil, failWith(ErrIssuerUnavailable, "discover issuer "+l.issuer, err)
	}
	l.failure = nil
	l.ready.Store(ks)
	return ks, nil
}

func (l *lazyKeys) discover(ctx context.Context) (*keySet, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, l.client), l.issuer)
	if err != nil {
		return nil, err
	}
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := provider.Claims(&meta); err != nil {
		return nil, fmt.Errorf("read discovery document: %w", err)
	}
	if meta.JWKSURI == "" {
		return nil, fmt.Errorf("discovery document has no jwks_uri")
	}
	return newKeySet(meta.JWKSURI, l.client, l.now), nil
}
