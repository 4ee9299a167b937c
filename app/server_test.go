package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/testlog"
)

const (
	testSecret = "It's a Secret to Everybody"
	testToken  = "test-api-token"
)

// testServer is a running `ripcord serve` on a loopback port.
type testServer struct {
	*Server
	URL string
}

type configT = config.Config

// tokensOf is the clusters setting with one token per cluster.
var tokensOf = config.TokensOf

func startServer(t *testing.T, dbURL string, opts Options) *testServer {
	t.Helper()
	return startServerWith(t, dbURL, opts, nil)
}

// startServerWith lets a test change the configuration before the start.
func startServerWith(t *testing.T, dbURL string, opts Options, tweak func(*config.Config)) *testServer {
	t.Helper()
	cfg := testConfig(dbURL)
	if tweak != nil {
		tweak(cfg)
	}
	ts, _ := runServer(t, cfg, opts)
	return ts
}

// runServer starts a server of cfg on a free loopback port, until stop is
// called or the test ends.
func runServer(t *testing.T, cfg *config.Config, opts Options) (ts *testServer, stop func()) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testlog.New(t)
	}
	if opts.CommitTimeout == 0 {
		opts.CommitTimeout = testCommitTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with an error: %v", err)
		}
	}
	t.Cleanup(stop)
	return &testServer{Server: srv, URL: "http://" + ln.Addr().String()}, stop
}

// testCommitTimeout is testserve.CommitTimeout, which this package's tests
// cannot import (testserve imports app). The outage tests set their own,
// shorter.
const testCommitTimeout = 30 * time.Second

func testConfig(dbURL string) *config.Config {
	c := config.Defaults()
	c.Listen, c.Database, c.PublicURL, c.APIToken = "127.0.0.1:0", dbURL, "http://127.0.0.1", testToken
	c.GitHub.WebhookSecrets = []string{"old-secret", testSecret}
	c.GitHub.APIURL = "http://127.0.0.1:1/"
	return c
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// deliver posts a signed delivery and returns the status code and body.
func (ts *testServer) deliver(t *testing.T, event, id string, body []byte, signature string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/github/hook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	if id != "" {
		req.Header.Set("X-GitHub-Delivery", id)
	}
	if signature != "" {
		req.Header.Set("X-Hub-Signature-256", signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post delivery: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// api calls GET /api/v1/... with the API token and decodes the JSON answer.
func (ts *testServer) api(t *testing.T, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: decode: %v", path, err)
		}
	}
	return resp.StatusCode
}

func (ts *testServer) countDeliveries(t *testing.T) int {
	t.Helper()
	var n int
	if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (ts *testServer) waitSettled(t *testing.T) {
	t.Helper()
	defer func() {
		if t.Failed() {
			rows, err := ts.db.Read.Query(`SELECT id, event, action, attempts, last_error FROM deliveries WHERE state = 'queued'`)
			if err != nil {
				return
			}
			defer rows.Close()
			for rows.Next() {
				var id, event, action, lastErr string
				var attempts int
				_ = rows.Scan(&id, &event, &action, &attempts, &lastErr)
				t.Logf("still queued: %s %s/%s after %d attempts: %s", id, event, action, attempts, lastErr)
			}
		}
	}()
	waitFor(t, "every delivery to be worked", 30*time.Second, func() bool {
		var n int
		if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE state = 'queued'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestWebURLForGitHubAndEnterpriseServer(t *testing.T) {
	t.Parallel()
	for api, want := range map[string]string{
		"https://api.github.com/":             "https://github.com/",
		"https://ghe.example.com/api/v3/":     "https://ghe.example.com/",
		"http://127.0.0.1:4000/":              "http://127.0.0.1:4000/",
		"http://127.0.0.1:4000/prefix/api/v3": "http://127.0.0.1:4000/prefix/",
	} {
		if got := WebURL(api); got != want {
			t.Errorf("WebURL(%q) = %q, want %q", api, got, want)
		}
	}
}
