package e2etest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testlog"
	"github.com/ripcord/ripcord/internal/testserve"
)

// Secret signs the deliveries; Token is the server's api_token.
const (
	Secret = "e2e-webhook-secret"
	Token  = "e2e-api-token"
)

// Env is a running server with its fake GitHub and OIDC issuer. The fakes
// outlive Restart, as GitHub outlives a restart of ripcord.
type Env struct {
	T      testing.TB
	GitHub *githubtest.Server
	Issuer *oidctest.Issuer
	DBURL  string
	URL    string // the server's base URL
	// Options are used by every start; tests set a GitHub clock here.
	Options app.Options

	db   *store.DB
	stop func()
	// configure, if set (StartWith), changes the configuration of every start.
	configure func(*config.Config)
}

// Start runs a server on a fresh database URL (testdb.URL) and a new fake GitHub.
func Start(t testing.TB, dbURL string, opts app.Options) *Env {
	t.Helper()
	return StartWith(t, dbURL, opts, nil)
}

// StartWith is Start with configure changing the server configuration
// (CDEvent sinks, say) before every start.
func StartWith(t testing.TB, dbURL string, opts app.Options, configure func(*config.Config)) *Env {
	t.Helper()
	e := &Env{T: t, GitHub: githubtest.NewServer(t), Issuer: oidctest.NewIssuer(t), DBURL: dbURL, Options: opts,
		configure: configure}
	e.start()
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("e2etest: open the database for inspection: %v", err)
	}
	e.db = db
	t.Cleanup(func() {
		e.Stop()
		_ = db.Close()
	})
	return e
}

// Config is the server configuration an Env runs with.
func (e *Env) Config() *config.Config {
	cfg := config.Defaults()
	cfg.Listen, cfg.Database, cfg.PublicURL, cfg.APIToken = "127.0.0.1:0", e.DBURL, "http://127.0.0.1", Token
	cfg.GitHub = config.GitHub{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(e.T),
		WebhookSecrets: []string{Secret}, APIURL: e.GitHub.URL()}
	cfg.OIDC = config.OIDC{Issuer: e.Issuer.URL(), Audience: oidctest.Audience}
	if e.configure != nil {
		e.configure(cfg)
	}
	return cfg
}

func (e *Env) start() {
	e.T.Helper()
	if err := e.launch(); err != nil {
		e.T.Fatalf("e2etest: %v", err)
	}
}

// launch starts the server; unlike start it may run on any goroutine.
func (e *Env) launch() error {
	t := e.T
	opts := e.Options
	if opts.Logger == nil {
		opts.Logger = testlog.New(t)
	}
	if opts.CommitTimeout == 0 {
		opts.CommitTimeout = testserve.CommitTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.New(ctx, e.Config(), opts)
	if err != nil {
		cancel()
		return fmt.Errorf("start server: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return fmt.Errorf("listen: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	e.URL = "http://" + ln.Addr().String()
	e.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("e2etest: server stopped with an error: %v", err)
		}
	}
	return nil
}

// StartReplicas starts n servers at once on one fresh database, as an
// operator's replicas behind a load balancer start after a rollout (all of
// them migrating the database as they start), with one fake GitHub and OIDC
// issuer. They stop when the test ends.
func StartReplicas(t testing.TB, dbURL string, opts app.Options, n int) []*Env {
	t.Helper()
	gh, issuer := githubtest.NewServer(t), oidctest.NewIssuer(t)
	envs := make([]*Env, n)
	for i := range envs {
		envs[i] = &Env{T: t, GitHub: gh, Issuer: issuer, DBURL: dbURL, Options: opts}
	}
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("e2etest: open the database for inspection: %v", err)
	}
	t.Cleanup(func() {
		for _, e := range envs {
			e.Stop()
		}
		_ = db.Close()
	})
	for _, e := range envs {
		e.db = db
	}
	StartAll(t, envs...)
	return envs
}

// StartAll starts stopped servers at once, as replicas start together
// after a rollout of their Deployment.
func StartAll(t testing.TB, envs ...*Env) {
	t.Helper()
	errs := make([]error, len(envs))
	var wg sync.WaitGroup
	for i, e := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.launch()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("e2etest: start replicas: %v", err)
	}
}

// Stop stops the server gracefully, as SIGTERM does: queued and scheduled
// jobs stay in the database for the next start.
func (e *Env) Stop() {
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
}

// Restart stops the server and starts a new one on the same database.
func (e *Env) Restart() {
	e.Stop()
	e.start()
}

// DB is a connection of the test's own to the server's database, for
// looking at what the server stored.
func (e *Env) DB() *sql.DB { return e.db.Read }

// Exec runs a statement on the server's database, for a test that puts
// it in a state the server's own path cannot reach on demand (a job run
// again late, as after a lost lease).
func (e *Env) Exec(query string, args ...any) {
	e.T.Helper()
	if _, err := e.db.Write.Exec(query, args...); err != nil {
		e.T.Fatalf("e2etest: %s: %v", strings.TrimSpace(query), err)
	}
}

// Int runs a query that returns one integer.
func (e *Env) Int(query string, args ...any) int {
	e.T.Helper()
	var n int
	if err := e.db.Read.QueryRow(query, args...).Scan(&n); err != nil {
		e.T.Fatalf("e2etest: %s: %v", strings.TrimSpace(query), err)
	}
	return n
}

// WaitFor polls cond until it holds, failing the test after timeout.
func (e *Env) WaitFor(what string, timeout time.Duration, cond func() bool) {
	e.T.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.T.Fatalf("timed out after %s waiting for %s\n%s", timeout, what, e.pending())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pending describes the deliveries and jobs not done yet, and the last
// ones that failed, for a test that timed out.
func (e *Env) pending() string {
	var b strings.Builder
	for _, q := range []struct{ title, query string }{
		{"deliveries not finished", `SELECT id || ' ' || event || '/' || action || ' ' || state || ' attempts ' || attempts || ' ' || last_error
			FROM deliveries WHERE state NOT IN ('processed', 'ignored') ORDER BY received_at`},
		{"jobs not finished", `SELECT kind || ' ' || state || ' attempt ' || attempt || ' scheduled ' || scheduled_at
			FROM river_job WHERE state NOT IN ('completed', 'cancelled') ORDER BY id`},
	} {
		rows, err := e.db.Read.Query(q.query)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", q.title, err)
			continue
		}
		fmt.Fprintf(&b, "%s:\n", q.title)
		for rows.Next() {
			var line string
			if rows.Scan(&line) == nil {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		}
		rows.Close()
	}
	return b.String()
}

// Settle waits until no delivery is queued and no job of the given kinds
// is waiting or running, so a test can assert that nothing more happens.
// It fails when nothing has finished for settleStall (work that is stuck,
// or a job that snoozes or retries for ever) or after settleBound in all
// (work that keeps making more work). A loaded machine works through a
// long queue slowly, and a queue that moves is not stuck: a fixed bound
// failed scenes of many commands whose low-priority replies were still
// being posted (the comment race of app/rollbackflow).
func (e *Env) Settle(kinds ...string) {
	e.T.Helper()
	q := `SELECT COUNT(*) FROM river_job WHERE state NOT IN ('completed', 'discarded', 'cancelled')`
	args := make([]any, len(kinds))
	if len(kinds) > 0 {
		ph := make([]string, len(kinds))
		for i, k := range kinds {
			ph[i], args[i] = "$"+itoa(i+1), k
		}
		q += ` AND kind IN (` + strings.Join(ph, ", ") + `)`
	}
	finished := func() int {
		return e.Int(`SELECT (SELECT COUNT(*) FROM river_job WHERE state IN ('completed', 'discarded', 'cancelled'))
			+ (SELECT COUNT(*) FROM deliveries WHERE state <> 'queued')`)
	}
	start := time.Now()
	last, moved := finished(), start
	for e.Int(`SELECT COUNT(*) FROM deliveries WHERE state = 'queued'`) != 0 || e.Int(q, args...) != 0 {
		now := time.Now()
		if n := finished(); n != last {
			last, moved = n, now
		}
		switch {
		case now.Sub(moved) > settleStall:
			e.T.Fatalf("nothing finished for %s while waiting for deliveries and jobs to settle\n%s", settleStall, e.pending())
		case now.Sub(start) > settleBound:
			e.T.Fatalf("deliveries and jobs still not settled after %s\n%s", settleBound, e.pending())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settleStall and settleBound bound Settle's wait (see there).
const (
	settleStall = 20 * time.Second
	settleBound = 3 * time.Minute
)

// String runs a query that returns one string; "" when it returns no row.
func (e *Env) String(query string, args ...any) string {
	e.T.Helper()
	var s string
	err := e.db.Read.QueryRow(query, args...).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return ""
	}
	if err != nil {
		e.T.Fatalf("e2etest: %s: %v", strings.TrimSpace(query), err)
	}
	return s
}
