package oidcauth_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ripcord/ripcord/internal/oidcauth"
	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
	"github.com/ripcord/ripcord/internal/testnet"
)

func TestIssuerDownAtFirstUseThenUp(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	c := newClock()
	v := newVerifier(t, iss, c)
	token := iss.Token(t, nil)

	iss.SetDown(true)
	_, err := v.Verify(context.Background(), token)
	wantKind(t, err, oidcauth.ErrIssuerUnavailable)
	if !strings.Contains(err.Error(), "503") {
		t.Errorf("message %q should carry the issuer's answer", err)
	}

	iss.SetDown(false)
	before := iss.Requests()
	_, err = v.Verify(context.Background(), token)
	wantKind(t, err, oidcauth.ErrIssuerUnavailable)
	if iss.Requests() != before {
		t.Errorf("retried discovery at once; a down issuer must not be hammered")
	}

	c.Advance(pastDiscoveryPause)
	mustVerify(t, v, token)
}

func TestIssuerUnreachable(t *testing.T) {
	gone := "http://" + testnet.RefusedAddr(t)
	iss := oidctest.NewIssuer(t)
	v, err := oidcauth.New(oidcauth.Config{Issuer: gone, Audience: oidctest.Audience})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), iss.Token(t, nil, oidctest.WithIssuer(gone)))
	wantKind(t, err, oidcauth.ErrIssuerUnavailable)
}

func TestIssuerAnsweringAsAnotherIssuer(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	slashed := iss.URL() + "/"
	v, err := oidcauth.New(oidcauth.Config{Issuer: slashed, Audience: oidctest.Audience})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), iss.Token(t, nil, oidctest.WithIssuer(slashed)))
	wantKind(t, err, oidcauth.ErrIssuerUnavailable)
	if !strings.Contains(err.Error(), "did not match") {
		t.Errorf("message %q should say the discovered issuer differs", err)
	}
}

func TestKeysDownAfterDiscovery(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	c := newClock()
	v := newVerifier(t, iss, c)
	token := iss.Token(t, nil)

	iss.SetKeysDown(true)
	_, err := v.Verify(context.Background(), token)
	wantKind(t, err, oidcauth.ErrIssuerUnavailable)

	iss.SetKeysDown(false)
	before := iss.Requests()
	_, err = v.Verify(context.Background(), token)
	wantKind(t, err, oidcauth.ErrIssuerUnavailable)
	if iss.Requests() != before {
		t.Errorf("refetched the keys at once; a failing key endpoint must not be hammered")
	}

	c.Advance(pastKeysPause)
	mustVerify(t, v, token)
}

// hangUpOnce is a transport whose first request finds its caller gone, as
// when the workflow's HTTP request is cancelled mid-discovery.
type hangUpOnce struct {
	cancel context.CancelFunc
	once   sync.Once
}

func (h *hangUpOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	hungUp := false
	h.once.Do(func() { h.cancel(); hungUp = true })
	if hungUp {
		return nil, req.Context().Err()
	}
	return http.DefaultTransport.RoundTrip(req)
}

func TestCallerHangingUpDoesNotPauseDiscovery(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	ctx, cancel := context.WithCancel(context.Background())
	v, err := oidcauth.New(oidcauth.Config{
		Issuer: iss.URL(), Audience: oidctest.Audience, Now: newClock().Now,
		HTTPClient: &http.Client{Transport: &hangUpOnce{cancel: cancel}},
	})
	if err != nil {
		t.Fatal(err)
	}
	token := iss.Token(t, nil)
	_, err = v.Verify(ctx, token)
	wantKind(t, err, oidcauth.ErrIssuerUnavailable)
	mustVerify(t, v, token)
}

func TestCachedKeysServeLaterTokensWithoutRequests(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	c := newClock()
	v := newVerifier(t, iss, c)
	mustVerify(t, v, iss.Token(t, nil))
	warm := iss.Requests()
	c.Advance(pastKeysPause)
	mustVerify(t, v, iss.Token(t, nil))
	if n := iss.Requests() - warm; n != 0 {
		t.Errorf("a token signed with a cached key made %d requests", n)
	}
}

func TestKeyRotationIsPickedUp(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	c := newClock()
	v := newVerifier(t, iss, c)
	firstKid := iss.KeyID()
	first := iss.Token(t, nil)
	mustVerify(t, v, first)

	iss.RotateKey()
	second := iss.Token(t, nil)
	// The keys were fetched a moment ago; the new kid waits for the pause.
	_, err := v.Verify(context.Background(), second)
	wantKind(t, err, oidcauth.ErrBadSignature)
	c.Advance(pastKeysPause)
	mustVerify(t, v, second)
	mustVerify(t, v, first)

	// A removed key stays trusted until something makes ripcord refetch.
	iss.RemoveKey(firstKid)
	mustVerify(t, v, first)
	iss.RotateKey()
	c.Advance(pastKeysPause)
	mustVerify(t, v, iss.Token(t, nil))
	_, err = v.Verify(context.Background(), first)
	wantKind(t, err, oidcauth.ErrBadSignature)
}

func TestForgedTokensDoNotHammerTheIssuer(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	c := newClock()
	v := newVerifier(t, iss, c)
	mustVerify(t, v, iss.Token(t, nil))
	stranger := oidctest.NewKey(t)
	forge := func(kid string) string {
		return iss.Token(t, nil, oidctest.WithSigningKey(stranger), oidctest.WithKeyID(kid))
	}

	before := iss.Requests()
	for _, kid := range []string{"forged-1", "forged-2", "forged-3", iss.KeyID(), ""} {
		_, err := v.Verify(context.Background(), forge(kid))
		wantKind(t, err, oidcauth.ErrBadSignature)
	}
	if n := iss.Requests() - before; n != 0 {
		t.Errorf("forged tokens made %d requests to the issuer within the pause, want none", n)
	}

	c.Advance(pastKeysPause)
	for _, kid := range []string{"forged-4", "forged-5"} {
		_, err := v.Verify(context.Background(), forge(kid))
		wantKind(t, err, oidcauth.ErrBadSignature)
	}
	if n := iss.Requests() - before; n != 1 {
		t.Errorf("after the pause forged tokens made %d requests, want exactly 1", n)
	}
}

func TestConcurrentFirstUseDiscoversOnce(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	v := newVerifier(t, iss, newClock())
	token := iss.Token(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := v.Verify(context.Background(), token)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := iss.Requests(); n != 2 {
		t.Errorf("8 first uses made %d requests, want 2 (discovery and keys once each)", n)
	}
}

func BenchmarkVerifyWarmKeyCache(b *testing.B) {
	iss := oidctest.NewIssuer(b)
	v := newVerifier(b, iss, newClock())
	token := iss.Token(b, nil)
	if _, err := v.Verify(context.Background(), token); err != nil {
		b.Fatal(err)
	}
	warm := iss.Requests()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(context.Background(), token); err != nil {
			b.Fatal(err)
		}
	}
	if iss.Requests() != warm {
		b.Fatalf("warm verification asked the issuer %d more times", iss.Requests()-warm)
	}
}
