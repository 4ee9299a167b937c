package attest

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/gates"
)

// switchable counts requests and fails them all while down.
type switchable struct {
	down     atomic.Bool
	requests atomic.Int64
}

func (s *switchable) RoundTrip(r *http.Request) (*http.Response, error) {
	s.requests.Add(1)
	if s.down.Load() {
		return nil, errors.New("connection refused")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func signedRelease(t testing.TB) (signer, string) {
	srv := startRegistry(t)
	key := newSigner(t)
	d := pushImage(t, srv, "acme/checkout")
	signedEntity(t, d).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).
		Attest(key.Signer, "spdxjson", spdxDoc, nil).Attest(key.Signer, "vuln", trivyScan(), nil).Push()
	return key, d.String()
}

func TestWarmCacheAnswersWithoutTheRegistry(t *testing.T) {
	key, image := signedRelease(t)
	net := &switchable{}
	v := NewVerifier(Registries{Transport: net}, 0)
	g := Provenance{Source: v, Trust: Trust{Policy: key.policy()}, BuilderID: builder, SourceRepository: source}
	if out := g.Evaluate(context.Background(), subjectOf(image)); out.Outcome != gates.Pass {
		t.Fatalf("cold: %s %q", out.Outcome, out.Summary)
	}
	net.down.Store(true)
	before := net.requests.Load()
	if out := g.Evaluate(context.Background(), subjectOf(image)); out.Outcome != gates.Pass {
		t.Fatalf("warm: %s %q, want the cached pass", out.Outcome, out.Summary)
	}
	if n := net.requests.Load() - before; n != 0 {
		t.Fatalf("warm verification made %d registry requests, want 0", n)
	}
}

func TestCannotDecideIsNotCached(t *testing.T) {
	key, image := signedRelease(t)
	net := &switchable{}
	net.down.Store(true)
	v := NewVerifier(Registries{Transport: net}, 0)
	if _, err := v.Verify(context.Background(), image, key.policy()); err == nil {
		t.Fatal("verification with the registry down succeeded")
	}
	net.down.Store(false)
	r, err := v.Verify(context.Background(), image, key.policy())
	if err != nil || r.Signed == "" {
		t.Fatalf("after the registry came back: %+v, %v; the earlier error must not have been cached", r, err)
	}
}

func TestAnotherPolicyIsVerifiedAgain(t *testing.T) {
	key, image := signedRelease(t)
	v := NewVerifier(Registries{}, 0)
	if r, err := v.Verify(context.Background(), image, key.policy()); err != nil || r.Signed == "" {
		t.Fatalf("with the signing key: %+v, %v", r, err)
	}
	r, err := v.Verify(context.Background(), image, newSigner(t).policy())
	if err != nil || r.Signed != "" {
		t.Fatalf("with another key: signed by %q (%v); the answer under the old key was reused", r.Signed, err)
	}
}

func TestGatesOfOneReleaseShareOneVerification(t *testing.T) {
	key, image := signedRelease(t)
	net := &switchable{}
	v := NewVerifier(Registries{Transport: net}, 0)
	trust := Trust{Policy: key.policy()}
	gs := []gates.Gate{
		Provenance{Source: v, Trust: trust, BuilderID: builder, SourceRepository: source},
		SBOM{Source: v, Trust: trust},
		ImageScan{Source: v, Trust: trust, Severity: "critical"},
	}
	for _, r := range gates.Evaluate(context.Background(), gs, subjectOf(image)) {
		if r.Verdict.Outcome != gates.Pass {
			t.Errorf("%s: %s %q", r.Gate, r.Verdict.Outcome, r.Verdict.Summary)
		}
	}
	once := net.requests.Load()
	if _, err := NewVerifier(Registries{Transport: net}, 0).Verify(context.Background(), image, key.policy()); err != nil {
		t.Fatal(err)
	}
	if alone := net.requests.Load() - once; once != alone {
		t.Fatalf("three gates made %d registry requests, one verification makes %d: they did not share it", once, alone)
	}
}

func TestCacheDropsTheLeastRecentlyUsed(t *testing.T) {
	c := newCache(2)
	ctx := context.Background()
	calls := 0
	verify := func(context.Context) (Report, error) { calls++; return Report{}, nil }
	for _, k := range []string{"a", "b", "a", "c", "a", "b"} {
		if _, err := c.do(ctx, k, verify); err != nil {
			t.Fatal(err)
		}
	}
	// a, b verified; a hit; c evicts b; a hit; b verified again (evicts c).
	if calls != 4 || c.len() != 2 {
		t.Fatalf("%d verifications, %d kept; want 4 and 2", calls, c.len())
	}
}

func TestConcurrentCallersWaitForOneVerification(t *testing.T) {
	c := newCache(4)
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	verify := func(context.Context) (Report, error) {
		if calls.Add(1) == 1 {
			close(started)
		}
		<-release
		return Report{Signed: "key"}, nil
	}
	var wg sync.WaitGroup
	results := make(chan Report, 5)
	call := func() {
		defer wg.Done()
		r, _ := c.do(context.Background(), "k", verify)
		results <- r
	}
	wg.Add(1)
	go call()
	<-started // the first caller is verifying; the others arrive while it does
	for range 4 {
		wg.Add(1)
		go call()
	}
	close(release)
	wg.Wait()
	close(results)
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d verifications for one key, want 1", n)
	}
	for r := range results {
		if r.Signed != "key" {
			t.Fatalf("a waiting caller got %+v, want the shared report", r)
		}
	}
}

func TestAnAbsentSignatureIsAskedAgainSoon(t *testing.T) {
	srv := startRegistry(t)
	key := newSigner(t)
	d := pushImage(t, srv, "acme/checkout")
	v := NewVerifier(Registries{}, 0)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	v.cache.now = func() time.Time { return now }
	if r, err := v.Verify(context.Background(), d.String(), key.policy()); err != nil || r.Signed != "" {
		t.Fatalf("before signing: %+v, %v", r, err)
	}
	// CI signs and attests after the PR opened.
	signedEntity(t, d).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
	if r, _ := v.Verify(context.Background(), d.String(), key.policy()); r.Signed != "" {
		t.Fatal("the unsigned answer was not cached at all")
	}
	now = now.Add(IncompleteFor)
	r, err := v.Verify(context.Background(), d.String(), key.policy())
	if err != nil || r.Signed == "" {
		t.Fatalf("a minute later: %+v, %v; the unsigned answer outlived %s", r, err, IncompleteFor)
	}
	srv.Close()
	now = now.Add(CompleteFor - time.Second)
	if r, err := v.Verify(context.Background(), d.String(), key.policy()); err != nil || r.Signed == "" {
		t.Fatalf("within %s of a complete answer, with the registry gone: %+v, %v; want the cached answer", CompleteFor, r, err)
	}
	now = now.Add(time.Second)
	if _, err := v.Verify(context.Background(), d.String(), key.policy()); err == nil {
		t.Fatalf("after %s the complete answer still stood in for the registry", CompleteFor)
	}
}

// blockFirst holds the first registry request until release is closed,
// whatever its context says, and says when it arrived.
type blockFirst struct {
	once     sync.Once
	arrived  chan struct{}
	release  chan struct{}
	requests atomic.Int64
}

func (b *blockFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.requests.Add(1) == 1 {
		b.once.Do(func() { close(b.arrived) })
		select {
		case <-b.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Two gate jobs check one digest: the second waits for the first's
// verification. The first job giving up (cancelled, timed out) must not
// fail the second with the first's "context canceled": the second would
// report "could not decide" about a signed image.
func TestACallerGivingUpDoesNotFailTheOthersWaiting(t *testing.T) {
	key, image := signedRelease(t)
	net := &blockFirst{arrived: make(chan struct{}), release: make(chan struct{})}
	v := NewVerifier(Registries{Transport: net}, 0)
	first, giveUp := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := v.Verify(first, image, key.policy())
		firstDone <- err
	}()
	<-net.arrived
	second := make(chan error, 1)
	var got Report
	go func() {
		var err error
		got, err = v.Verify(context.Background(), image, key.policy())
		second <- err
	}()
	// Let the second caller join the verification in flight before the
	// first gives up (on the old code it otherwise starts one of its own,
	// and the test proves nothing; it cannot fail the new code).
	time.Sleep(100 * time.Millisecond)
	giveUp()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up got %v, want its own context's error", err)
	}
	close(net.release)
	if err := <-second; err != nil {
		t.Fatalf("the caller still waiting got %v, want the verification's answer", err)
	}
	if got.Signed == "" {
		t.Errorf("the caller still waiting got %+v, want the image signed", got)
	}
}
