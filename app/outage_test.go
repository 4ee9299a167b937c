package app

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// outageHandler takes installation deliveries, holding the one named hold
// until release is closed, and ping deliveries, failing each one's first
// attempt so that its second runs as a River job.
type outageHandler struct {
	hold    string
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	pings   map[string]int
}

func (*outageHandler) Handles() []string { return []string{"installation", "ping"} }

func (h *outageHandler) Handle(_ context.Context, d Delivery) (Commit, error) {
	if d.Event == "ping" {
		h.mu.Lock()
		h.pings[d.ID]++
		n := h.pings[d.ID]
		h.mu.Unlock()
		if n == 1 {
			return nil, fmt.Errorf("first attempt of %s fails, so that the second is a job", d.ID)
		}
	}
	if d.ID == h.hold {
		h.entered <- struct{}{}
		<-h.release
	}
	return func(context.Context, *sql.Tx) error { return nil }, nil
}

// status posts to path and returns the status and body; an error (the
// server refused the connection) is status 0.
func outagePost(url, token string, header map[string]string, body []byte) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func outageGet(url string) (int, string) {
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// warnLines counts the log lines at WARN or ERROR in logs.
func warnLines(logs string) []string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return out
}

// PostgreSQL stops while `serve` runs, with a drain round in flight, a
// delivery queued behind it and a River retry scheduled, then comes back.
// While it is down the server must say so (5xx for deliveries and facts,
// 503 on /readyz with the reason) and acknowledge nothing; once it is back,
// without a restart of serve, new deliveries are acknowledged and
// processed, those acknowledged before are processed exactly once, River
// runs its jobs again, and the log told what happened without a line per
// poll.
func TestPostgresOutageAcknowledgesNothingAndLosesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts and stops a PostgreSQL server of its own")
	}
	pg := testdb.StartPostgres(t)
	logs := &syncBuffer{}
	issuer := oidctest.NewIssuer(t)
	h := &outageHandler{hold: "held", entered: make(chan struct{}, 1), release: make(chan struct{}), pings: map[string]int{}}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(h.release) }) }
	t.Cleanup(release)
	ts := startServerWith(t, pg.URL(), Options{
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Handlers:  []EventHandler{h},
		RetryBase: 2 * time.Second,
	}, func(c *configT) {
		c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
		c.OIDC.Issuer, c.OIDC.Audience = issuer.URL(), oidctest.Audience
	})
	ts.install(t, "acme/checkout")

	install := githubtest.LoadPayload(t, "installation", "created.payload.json")
	ping := githubtest.LoadPayload(t, "ping", "payload.json")
	hook := func(event, id string, body []byte) (int, string) {
		return outagePost(ts.URL+"/api/github/hook", "", map[string]string{"X-GitHub-Event": event,
			"X-GitHub-Delivery": id, "X-Hub-Signature-256": githubtest.Sign(testSecret, body)}, body)
	}
	taskFact := func(run int) []byte {
		return fmt.Appendf(nil, `{"source": "task", "repository": "acme/checkout", "workflow_run_id": %d, "run_attempt": 1,
			"status": "in_progress", "app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v1",
			"release_id": "r-outage-%d", "observed_at": %q}`, run, run, time.Now().UTC().Format(time.RFC3339))
	}
	token := issuer.Token(t, nil)

	// Before: a round holds "held" (its transaction open on PostgreSQL),
	// "behind" waits for the next round, "ping-before" fails its first
	// attempt and its retry job is due during the outage.
	acked := []string{}
	if code, resp := hook("ping", "ping-before", ping); code != http.StatusAccepted {
		t.Fatalf("delivery ping-before: %d %s", code, resp)
	}
	acked = append(acked, "ping-before")
	waitFor(t, "ping-before's first attempt", 10*time.Second, func() bool {
		var n int
		_ = ts.db.Read.QueryRow(`SELECT attempts FROM deliveries WHERE id = 'ping-before'`).Scan(&n)
		return n == 1
	})
	for _, d := range []struct{ event, id string }{{"installation", "held"}, {"installation", "behind"}} {
		if code, resp := hook(d.event, d.id, install); code != http.StatusAccepted {
			t.Fatalf("delivery %s before the outage: %d %s", d.id, code, resp)
		}
		acked = append(acked, d.id)
		if d.id == "held" {
			select {
			case <-h.entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the drain never took the held delivery")
			}
		}
	}
	if code, resp := outagePost(ts.URL+"/api/v1/facts", token, nil, taskFact(1)); code != http.StatusOK {
		t.Fatalf("fact before the outage: %d %s", code, resp)
	}

	// The outage.
	logsBefore := len(logs.String())
	pg.Stop()
	down := time.Now()
	for i := 0; time.Since(down) < 4*time.Second; i++ {
		if code, resp := hook("installation", fmt.Sprintf("during-%d", i), install); code < 500 {
			t.Errorf("a delivery while the database is down was answered %d %s, want 5xx", code, resp)
		}
		if code, resp := outageGet(ts.URL + "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(resp, "database") {
			t.Errorf("/readyz while the database is down: %d %q, want 503 naming the database", code, resp)
		}
		if code, resp := outagePost(ts.URL+"/api/v1/facts", token, nil, taskFact(100+i)); code < 500 {
			t.Errorf("a task fact while the database is down was answered %d %s, want 5xx", code, resp)
		}
		if code, resp := outagePost(ts.URL+"/api/v1/facts/prod-eu", "tok-eu", nil,
			fmt.Appendf(nil, `{"source": "rollout", "namespace": "shop", "name": "checkout", "uid": "u-%d", "generation": 1,
				"observed_generation": 1, "phase": "Progressing", "images": ["registry.example/shop/checkout:v1"],
				"release_id": "r-outage-1", "observed_at": %q}`, i, time.Now().UTC().Format(time.RFC3339))); code < 500 {
			t.Errorf("a cluster fact while the database is down was answered %d %s, want 5xx", code, resp)
		}
		if i == 1 {
			release() // the held round now tries to store its result
		}
		time.Sleep(200 * time.Millisecond)
	}
	outageLogs := logs.String()[logsBefore:]
	pg.Start()
	up := time.Now()

	// After: ready again, without a restart of serve.
	waitFor(t, "/readyz to answer 200 again", 20*time.Second, func() bool {
		code, _ := outageGet(ts.URL + "/readyz")
		return code == http.StatusOK
	})
	for _, d := range []struct{ event, id string }{{"installation", "after"}, {"ping", "ping-after"}} {
		body := install
		if d.event == "ping" {
			body = ping
		}
		waitFor(t, "a delivery to be acknowledged after the outage", 20*time.Second, func() bool {
			code, _ := hook(d.event, d.id, body)
			return code == http.StatusAccepted
		})
		acked = append(acked, d.id)
	}
	if code, resp := outagePost(ts.URL+"/api/v1/facts", token, nil, taskFact(2)); code != http.StatusOK {
		t.Errorf("fact after the outage: %d %s", code, resp)
	}
	state := func(id string) (string, int) {
		var s string
		var n int
		if err := ts.db.Read.QueryRow(`SELECT state, processed_count FROM deliveries WHERE id = $1`, id).Scan(&s, &n); err != nil {
			return "missing: " + err.Error(), 0
		}
		return s, n
	}
	waitFor(t, "every acknowledged delivery to be processed (the pings' second attempts are River jobs)", 30*time.Second, func() bool {
		for _, id := range acked {
			if s, _ := state(id); s != DeliveryProcessed {
				return false
			}
		}
		return true
	})
	for _, id := range acked {
		if s, n := state(id); s != DeliveryProcessed || n != 1 {
			t.Errorf("%s ended %s after %d completions, want processed once", id, s, n)
		}
	}
	var during int
	if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE id LIKE 'during-%'`).Scan(&during); err != nil {
		t.Fatal(err)
	}
	if during != 0 {
		t.Errorf("%d deliveries refused during the outage were stored", during)
	}
	ts.checkCompletedOnce(t)
	t.Logf("PostgreSQL was down %v; serve answered again %v after it came back", up.Sub(down).Round(time.Millisecond), time.Since(up).Round(time.Millisecond))

	// The log: what happened, and not a line per poll.
	warns := warnLines(outageLogs)
	t.Logf("%d warnings and errors logged during the 4 s outage:\n%s", len(warns), strings.Join(warns, "\n"))
	if len(warns) == 0 {
		t.Error("nothing was logged while the database was down")
	}
	if len(warns) > 12 {
		t.Errorf("%d warnings and errors in a 4 s outage: the log floods (a line per poll)", len(warns))
	}
	if !strings.Contains(logs.String()[logsBefore:], "database is back") {
		t.Errorf("the log does not say the database is back:\n%s", logs.String()[logsBefore:])
	}
}

// freezingProxy forwards TCP connections to a backend until frozen; then it
// forwards nothing more and answers no new connection, as a database host
// that stops answering (a network partition, a hung server) rather than
// refusing.
type freezingProxy struct {
	ln      net.Listener
	backend string
	frozen  atomic.Bool
	mu      sync.Mutex
	held    []net.Conn // accepted while frozen
}

// thaw forwards again; the connections accepted meanwhile are reset, as
// a healed network resets those its far end never heard of.
func (p *freezingProxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen.Store(false)
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}

func newFreezingProxy(t *testing.T, backend string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln, backend: backend}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.frozen.Load() {
				p.held = append(p.held, c) // accepted, not answered
				p.mu.Unlock()
				continue
			}
			p.mu.Unlock()
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(2)
			pipe := func(dst, src net.Conn) {
				defer conns.Done()
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if err != nil {
						dst.Close()
						return
					}
					for p.frozen.Load() {
						time.Sleep(10 * time.Millisecond) // hold the bytes, as a partition does
					}
					if _, err := dst.Write(buf[:n]); err != nil {
						src.Close()
						return
					}
				}
			}
			go pipe(b, c)
			go pipe(c, b)
		}
	}()
	return p
}

// A database that stops answering (rather than refusing) must not hold
// deliveries without an answer: GitHub gives up on a delivery after 10 s,
// and a request that hangs is no answer at all. The intake answers 503
// within its commit timeout, and once the database answers again,
// deliveries are acknowledged and processed.
func TestPostgresThatStopsAnsweringIsRefusedInTime(t *testing.T) {
	// Not parallel: it bounds the refusal's wall time, which the CPU of
	// the package's other tests would stretch.
	if testing.Short() {
		t.Skip("starts a PostgreSQL server of its own")
	}
	pg := testdb.StartPostgres(t)
	u, _ := url.Parse(pg.URL())
	proxy := newFreezingProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	const commitTimeout = 3 * time.Second
	ts := startServerWith(t, u.String(), Options{CommitTimeout: commitTimeout}, func(c *configT) { c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"}) })
	body := githubtest.LoadPayload(t, "ping", "payload.json")
	hook := func(id string) (int, string) {
		return outagePost(ts.URL+"/api/github/hook", "", map[string]string{"X-GitHub-Event": "ping",
			"X-GitHub-Delivery": id, "X-Hub-Signature-256": githubtest.Sign(testSecret, body)}, body)
	}
	if code, resp := hook("before"); code != http.StatusAccepted {
		t.Fatalf("before: %d %s", code, resp)
	}
	proxy.frozen.Store(true)
	began := time.Now()
	code, resp := hook("frozen")
	took := time.Since(began)
	if code < 500 || took > commitTimeout+2*time.Second {
		t.Errorf("a delivery while the database does not answer: %d %q after %v, want 5xx within %v", code, resp, took.Round(time.Millisecond), commitTimeout)
	}
	began = time.Now()
	code, resp = outagePost(ts.URL+"/api/v1/facts/prod-eu", "tok-eu", nil, fmt.Appendf(nil, `{"source": "rollout",
		"namespace": "shop", "name": "checkout", "uid": "u-1", "generation": 1, "observed_generation": 1, "phase": "Progressing",
		"images": ["registry.example/shop/checkout:v1"], "release_id": "r-1", "observed_at": %q}`, time.Now().UTC().Format(time.RFC3339)))
	took = time.Since(began)
	if code < 500 || took > commitTimeout+2*time.Second {
		t.Errorf("a fact while the database does not answer: %d %q after %v, want 5xx within %v", code, resp, took.Round(time.Millisecond), commitTimeout)
	}
	proxy.thaw()
	began = time.Now()
	waitFor(t, "a delivery to be acknowledged once the database answers", 30*time.Second, func() bool {
		code, _ := hook("after")
		return code == http.StatusAccepted
	})
	t.Logf("acknowledged again %v after the database answered", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { t.Logf("stopping the server") })
}
