package ghclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// fakeClock moves only when slept on, and remembers every sleep, so a
// test can say "the 81st write waited 60s" without waiting at all.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// script is a test GitHub: it answers the n-th request (from 1) with
// handle and remembers every request it saw.
type script struct {
	mu     sync.Mutex
	seen   []*http.Request
	bodies []string
	handle func(n int, w http.ResponseWriter, r *http.Request)
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, r.Clone(context.Background()))
	s.bodies = append(s.bodies, string(body))
	count := len(s.seen)
	s.mu.Unlock()
	s.handle(count, w, r)
}

func (s *script) hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *script) request(i int) *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[i]
}

// serve starts the script on 127.0.0.1.
func serve(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) (*script, *httptest.Server) {
	t.Helper()
	s := &script{handle: handle}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// client is a go-github v66 client for srv through mws, acting as the
// given installation the way go-githubapp labels it.
func client(t testing.TB, baseURL string, installation string, mws ...githubapp.ClientMiddleware) *github.Client {
	t.Helper()
	hc := &http.Client{Transport: Wrap(http.DefaultTransport, mws...)}
	c := github.NewClient(hc)
	u, err := url.Parse(baseURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	c.UserAgent = "ripcord/test (installation: " + installation + ")"
	return c
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (s *script) body(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.bodies) {
		return ""
	}
	return s.bodies[i]
}
