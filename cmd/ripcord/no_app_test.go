package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingProxy stands between the CLI and a real server and counts the
// requests it passes on, by path; with strip, it drops the code of each
// error answer, so that the same 503 comes without its marker.
type countingProxy struct {
	mu sync.Mutex
	n  map[string]int
}

func (p *countingProxy) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[path]
}

func proxyTo(t *testing.T, server string, strip bool) (string, *countingProxy) {
	t.Helper()
	target, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{n: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	if strip {
		rp.ModifyResponse = func(resp *http.Response) error {
			if resp.StatusCode < 400 {
				return nil
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			var body map[string]any
			if err := json.Unmarshal(data, &body); err != nil {
				return err
			}
			delete(body, "code")
			if data, err = json.Marshal(body); err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(data))
			resp.ContentLength = int64(len(data))
			resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
			return nil
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.n[r.URL.Path]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, p
}

// A `ripcord serve` with no GitHub App answers `rollout start` and
// `rollback` 503, and the CLI asked four times more over 15 s before it
// said why, for an answer that only the server's operator can change. The
// answer's code (app_not_configured) stops it at the first: one request,
// the server's message, and where the App is registered.
func TestCLIStopsAtTheFirstAnswerOfAServerWithNoApp(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	server, proxy := proxyTo(t, inProcessServer(t), false)
	env := []string{"RIPCORD_SERVER=" + server, "RIPCORD_API_TOKEN=cli-token"}
	for _, c := range []struct {
		path string
		args []string
	}{
		{"/api/v1/rollouts", []string{"rollout", "start", "--app", "checkout", "--environment", "prod", "--version", "v42",
			"--repository", "acme/checkout", "--cluster", "prod-eu"}},
		{"/api/v1/rollbacks", []string{"rollback", "--app", "checkout", "--environment", "prod", "--cluster", "prod-eu",
			"--repository", "acme/checkout", "--reason", "bad deploy"}},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			code, stdout, stderr := ripcord(t, env, c.args...)
			if n := proxy.count(c.path); n != 1 {
				t.Errorf("%d requests to %s, want 1: asking again changes nothing until the server has an App", n, c.path)
			}
			for _, want := range []string{
				"server answered 503: no GitHub App is configured, so ripcord cannot act on acme/checkout",
				"register it at " + server + "/setup?token=… with the set-up token from the server's start-up log",
				"or set github.app_id and github.private_key",
			} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q; want it to hold %q", stderr, want)
				}
			}
			if code != 1 || strings.Contains(stderr, "retrying") {
				t.Errorf("exit %d, stderr %q; want 1 and no retry\nstdout: %s", code, stderr, stdout)
			}
		})
	}
}

// Only the code stops the CLI: the same 503 without it (as from a server
// before the code, or any other 503: the database down, GitHub's rate
// limit) is asked again as before, four times more.
func TestAPIClientRetriesA503WithoutTheNoAppCode(t *testing.T) {
	for _, strip := range []bool{false, true} {
		t.Run("code stripped "+strconv.FormatBool(strip), func(t *testing.T) {
			server, proxy := proxyTo(t, inProcessServer(t), strip)
			cl := flagClient(t, server)
			cl.token, cl.retries, cl.backoff = "cli-token", 4, time.Millisecond
			body := []byte(`{"repository": "acme/checkout", "app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v2"}`)
			err := cl.do(context.Background(), "POST", "/api/v1/rollouts", body, nil)
			want := 1
			if strip {
				want = 5
			}
			if n := proxy.count("/api/v1/rollouts"); n != want {
				t.Errorf("%d requests, want %d", n, want)
			}
			if err == nil || !strings.Contains(err.Error(), "server answered 503: no GitHub App is configured") {
				t.Errorf("error %v; want the 503", err)
			}
		})
	}
}
