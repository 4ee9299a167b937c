package cluster

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// An agent whose deliveries the server refuses (a stale token, another
// cluster's) or that cannot reach it delivers nothing, and its log alone
// said so. /healthz shows the last delivery error and since when at once,
// and answers 503 naming it, and where the token came from, once the
// deliveries have failed for longer than the agent's patience: a server
// restart it rides out on its spool does not make it unready. It is ready
// again once the server takes a delivery.
func TestHealthzSaysTheServerRefusesOrCannotBeReachedOnceItLasts(t *testing.T) {
	t.Parallel()
	const from = "environment variable RIPCORD_CLUSTER_TOKEN"
	var accept atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !accept.Load() {
			http.Error(w, `{"error":"unknown token"}`, http.StatusUnauthorized)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/inventory"):
			_, _ = io.WriteString(w, `{"deleted":[]}`)
		case r.Method == http.MethodPost:
			_, _ = io.WriteString(w, `{"results":[]}`)
		default: // the actions long poll
			select {
			case <-r.Context().Done():
			case <-time.After(200 * time.Millisecond):
			}
			_, _ = io.WriteString(w, `{"actions":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	a, waitFor := healthzAgent(t, srv.URL, "stale", from)
	setPatience := func(p time.Duration) {
		a.deliver.streak.mu.Lock()
		a.deliver.streak.patience = p
		a.deliver.streak.mu.Unlock()
	}
	setPatience(time.Hour)

	// The inventory, sent once the watches listed, is refused.
	got := waitFor("show the refused delivery", func(h healthzAnswer) bool { return h.body["last_delivery_error"] != "" })
	if got.code != http.StatusOK || got.body["status"] != "ok" || got.body["last_delivery_error_since"] == nil {
		t.Errorf("within the patience: /healthz %d %v; want 200, ok, the error and since when", got.code, got.body)
	}

	setPatience(0)
	got = waitFor("answer 503", func(h healthzAnswer) bool { return h.code == http.StatusServiceUnavailable })
	status, _ := got.body["status"].(string)
	for _, want := range []string{"cannot deliver to the server since", "401", "refuses the agent's token, read from " + from} {
		if !strings.Contains(status, want) {
			t.Errorf("/healthz status %q; want it to say %q", status, want)
		}
	}

	accept.Store(true)
	got = waitFor("be OK once the server takes a delivery", func(h healthzAnswer) bool { return h.code == http.StatusOK })
	if got.body["last_delivery_error"] != "" || got.body["last_delivery_error_since"] != nil {
		t.Errorf("/healthz %v; want no delivery error once the server took one", got.body)
	}
}

// An agent that cannot poll for cluster actions cannot roll back, even
// while its facts arrive (a proxy in front of the server that fails the
// actions route, say), and its log alone said so. /healthz shows the last
// poll error and since when at once, answers 503 naming the actions poll
// once the polls have failed for longer than the agent's patience, and is
// ready again once the server answers a poll.
func TestHealthzSaysTheActionsPollFailsOnceItLasts(t *testing.T) {
	t.Parallel()
	var pollsOK atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/inventory"):
			_, _ = io.WriteString(w, `{"deleted":[]}`)
		case r.Method == http.MethodPost:
			_, _ = io.WriteString(w, `{"results":[]}`)
		case !pollsOK.Load():
			http.Error(w, "upstream connect error", http.StatusBadGateway)
		default:
			select {
			case <-r.Context().Done():
			case <-time.After(200 * time.Millisecond):
			}
			_, _ = io.WriteString(w, `{"actions":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	a, waitFor := healthzAgent(t, srv.URL, "tok", "")
	setPatience := func(p time.Duration) {
		a.actions.polls.mu.Lock()
		a.actions.polls.patience = p
		a.actions.polls.mu.Unlock()
	}
	setPatience(time.Hour)

	// Ready once the watches listed, the polls failing within the patience.
	got := waitFor("be ready showing the failed poll", func(h healthzAnswer) bool {
		e, _ := h.body["last_poll_error"].(string)
		return e != "" && h.code == http.StatusOK
	})
	if got.body["status"] != "ok" || got.body["last_poll_error_since"] == nil {
		t.Errorf("within the patience: /healthz %d %v; want ok, the error and since when", got.code, got.body)
	}

	setPatience(0)
	got = waitFor("answer 503", func(h healthzAnswer) bool { return h.code == http.StatusServiceUnavailable })
	status, _ := got.body["status"].(string)
	for _, want := range []string{"cannot poll the server for cluster actions since", "502", "no rollback reaches this agent"} {
		if !strings.Contains(status, want) {
			t.Errorf("/healthz status %q; want it to say %q", status, want)
		}
	}
	if strings.Contains(status, "cannot deliver") || got.body["last_delivery_error"] != "" {
		t.Errorf("/healthz %v; the deliveries succeed, want only the poll named", got.body)
	}

	pollsOK.Store(true)
	got = waitFor("be OK once the server answers a poll", func(h healthzAnswer) bool { return h.code == http.StatusOK })
	if got.body["last_poll_error"] != "" || got.body["last_poll_error_since"] != nil {
		t.Errorf("/healthz %v; want no poll error once the server answered one", got.body)
	}
}

// healthzAnswer is one answer of an agent's /healthz.
type healthzAnswer struct {
	code int
	body map[string]any
}

// healthzAgent runs, until the test ends, an agent of cluster prod-eu
// against server with token tok (read from from), its Rollouts off and no
// resync, and serves its /healthz. waitFor waits up to 10 s for an answer
// of /healthz that meets cond, and returns it.
func healthzAgent(t *testing.T, server, tok, from string) (a *Agent, waitFor func(what string, cond func(healthzAnswer) bool) healthzAnswer) {
	t.Helper()
	a, err := New(Config{Cluster: "prod-eu", Server: server, Token: func() (string, error) { return tok, nil }, TokenFrom: from,
		StateDir: t.TempDir(), Resync: time.Hour, PollWait: 200 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
		Rollouts: RolloutsOff, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, fake.NewClientset(), nil)
	if err != nil {
		t.Fatal(err)
	}
	health := httptest.NewServer(a.Handler())
	t.Cleanup(health.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	get := func() healthzAnswer {
		t.Helper()
		resp, err := http.Get(health.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return healthzAnswer{resp.StatusCode, body}
	}
	return a, func(what string, cond func(healthzAnswer) bool) healthzAnswer {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			got := get()
			if cond(got) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for /healthz to %s; last %d %v", what, got.code, got.body)
			}
		}
	}
}
