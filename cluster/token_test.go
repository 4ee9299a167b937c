package cluster

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ripcord/ripcord/cluster/actionapi"
)

// The agent presents one token. A token file with several (the server's
// file during a rotation, mounted by mistake) is refused saying so, rather
// than sent whole as a header no HTTP client will send.
func TestTokenFileHoldsOneToken(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "token")
	tok := TokenFile(path)
	for body, want := range map[string]string{"tok-new\n": "", "\n  tok-new \n\n": "", "tok-old\ntok-new\n": "2 tokens", "\n": "empty"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := tok()
		switch {
		case want == "" && (err != nil || got != "tok-new"):
			t.Errorf("%q: %q, %v; want tok-new", body, got, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %q, %v; want an error naming %s", body, got, err, want)
		}
	}
}

// logSink keeps the agent's log records, for tests that look for a line
// the agent logs from one of its goroutines.
type logSink struct {
	mu      sync.Mutex
	records []slog.Record
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r.Clone())
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

// attr is the attribute key of the first record logged with message msg, and
// whether there is one.
func (s *logSink) attr(msg, key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.records {
		if r.Message != msg {
			continue
		}
		v := ""
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				v = a.Value.String()
			}
			return true
		})
		return v, true
	}
	return "", false
}

// refusingServer answers 401 to every request, as the server does to a
// token it does not know, and counts the action polls.
func refusingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	polls := &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			polls.Add(1)
		}
		http.Error(w, `{"error":"unknown token"}`, http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv, polls
}

// The server cannot tell a stale token from one read from the wrong place;
// the operator can, when the agent says where it read it. Every request
// the agent makes with its token logs that on a 401, not the fact
// deliveries alone: the long poll for cluster actions, an action's result
// and the inventory too. The poll backs off, as every request to the
// server does, rather than asking again at once.
func TestEveryRequestWhoseTokenIsRefusedSaysWhereTheTokenCameFrom(t *testing.T) {
	t.Parallel()
	const from = "file /var/run/ripcord/token given by flag --token-file"
	srv, polls := refusingServer(t)
	logs := &logSink{}
	a, err := New(Config{Cluster: "prod-eu", Server: srv.URL, Token: func() (string, error) { return "stale", nil }, TokenFrom: from,
		StateDir: t.TempDir(), Resync: time.Hour, PollWait: 200 * time.Millisecond, MaxBackoff: time.Second, Rollouts: RolloutsOff,
		Log: slog.New(logs)}, fake.NewClientset(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := time.Now()
	go func() { done <- a.Run(ctx) }()
	// The fact deliveries say so too (TestARefusedTokenIsLoggedWithWhereItCameFrom).
	lines := []string{"cannot poll for cluster actions", "cannot send the inventory"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		all := true
		for _, msg := range lines {
			_, ok := logs.attr(msg, "err")
			all = all && ok
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("within 10 s the agent did not log all of %q", lines)
		}
	}
	n, elapsed := polls.Load(), time.Since(started)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, msg := range lines {
		if got, _ := logs.attr(msg, "token_from"); got != from {
			t.Errorf("%q logged token_from=%q, want %q", msg, got, from)
		}
	}
	// With the pause doubling from 1 s (capped at MaxBackoff, 1 s here),
	// at most one poll a second after the first.
	if limit := int32(elapsed/time.Second) + 2; n > limit {
		t.Errorf("%d polls refused with 401 in %s, want at most %d: a refused poll must back off", n, elapsed.Round(time.Millisecond), limit)
	}

	// An action's result the server refuses the token of.
	if msg, got := refusedReportLogsTokenFrom(t, a); got != from {
		t.Errorf("%q logged token_from=%q, want %q", msg, got, from)
	}
}

// On the actions API a 403 refuses the token too: it is another cluster's
// (the server says whose), read from the wrong place, and the operator
// needs to know which place. The poll, an action's result and a fact
// delivery log where the token came from on a 403 as on a 401 (a fact
// delivery only when the 403 names no field: one that does refuses a fact).
func TestAnotherClustersTokenOnTheActionsAPISaysWhereTheTokenCameFrom(t *testing.T) {
	t.Parallel()
	const from = "file /var/run/ripcord/token given by flag --token-file"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"this token belongs to cluster \"prod-us\", not \"prod-eu\""}`, http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	logs := &logSink{}
	a, err := New(Config{Cluster: "prod-eu", Server: srv.URL, Token: func() (string, error) { return "prod-us-token", nil }, TokenFrom: from,
		StateDir: t.TempDir(), Resync: time.Hour, PollWait: 200 * time.Millisecond, MaxBackoff: time.Second, Rollouts: RolloutsOff,
		Log: slog.New(logs)}, fake.NewClientset(deployment()), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	const poll, facts = "cannot poll for cluster actions", "cannot deliver facts; they stay spooled"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, polled := logs.attr(poll, "err")
		_, delivered := logs.attr(facts, "err")
		if polled && delivered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("within 10 s the agent did not log both %q and %q", poll, facts)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{poll, facts} {
		if got, _ := logs.attr(msg, "token_from"); got != from {
			t.Errorf("%q on a 403 logged token_from=%q, want %q", msg, got, from)
		}
		if got, _ := logs.attr(msg, "hint"); !strings.Contains(got, "another cluster's") {
			t.Errorf("%q on a 403 logged hint=%q, want one saying the token is another cluster's", msg, got)
		}
	}

	if msg, got := refusedReportLogsTokenFrom(t, a); got != from {
		t.Errorf("%q on a 403 logged token_from=%q, want %q", msg, got, from)
	}
}

// refusedReportLogsTokenFrom has a's action runner (a stopped; the runner as
// New made it) report an action's result to a server that refuses it, and
// returns the line it logs and the token_from that line names.
func refusedReportLogsTokenFrom(t *testing.T, a *Agent) (msg, tokenFrom string) {
	t.Helper()
	logs := &logSink{}
	r := a.actions
	r.log = slog.New(logs)
	ctx, cancel := context.WithCancel(context.Background())
	reported := make(chan struct{})
	go func() {
		r.report(ctx, r.log, rollbackAction(), actionapi.Result{Status: actionapi.StatusDone})
		close(reported)
	}()
	msg = "cannot report the action's result; retrying"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok := logs.attr(msg, "err"); ok {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("within 10 s the agent did not log %q", msg)
		}
	}
	cancel()
	<-reported
	tokenFrom, _ = logs.attr(msg, "token_from")
	return msg, tokenFrom
}
