package oidcauth_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/oidcauth"
	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
)

// clock is a settable clock shared by a verifier and its test. It starts at
// the real time so the issuer's tokens, stamped with the real time, are current.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Past the verifier's pauses (5s for discovery, 10s for keys) and well
// inside a token's five-minute life.
const (
	pastDiscoveryPause = 6 * time.Second
	pastKeysPause      = 11 * time.Second
)

func newVerifier(t testing.TB, iss *oidctest.Issuer, c *clock) *oidcauth.Verifier {
	t.Helper()
	v, err := oidcauth.New(oidcauth.Config{Issuer: iss.URL(), Audience: oidctest.Audience, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustVerify(t *testing.T, v *oidcauth.Verifier, token string) *oidcauth.Claims {
	t.Helper()
	claims, err := v.Verify(context.Background(), token)
	if err != nil {
		t.Fatalf("Verify refused a good token: %v", err)
	}
	return claims
}

func wantKind(t *testing.T, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want %v", err, kind)
	}
}
