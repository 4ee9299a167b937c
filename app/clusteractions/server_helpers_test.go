package clusteractions_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testlog"
	"github.com/ripcord/ripcord/internal/testserve"
	"github.com/ripcord/ripcord/records"
)

// Cluster tokens and the api token of the test server.
const (
	euToken  = "token-prod-eu"
	usToken  = "token-prod-us"
	apiToken = "api-token"
)

// server is `ripcord serve` on a test database, restartable on the same
// database, as an operator stops and starts it.
type server struct {
	t     testing.TB
	dbURL string
	URL   string
	db    *store.DB // the test's own connection, to enqueue and inspect
	addr  string
	stop  func()
}

func startServer(t testing.TB, dbURL string) *server {
	t.Helper()
	s := &server{t: t, dbURL: dbURL}
	s.Start()
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("open the database: %v", err)
	}
	s.db = db
	t.Cleanup(func() {
		s.Stop()
		_ = db.Close()
	})
	return s
}

// Start starts the server, on the address it had before when restarted.
func (s *server) Start() {
	t := s.t
	t.Helper()
	cfg := config.Defaults()
	cfg.Listen, cfg.Database, cfg.PublicURL, cfg.APIToken = "127.0.0.1:0", s.dbURL, "http://127.0.0.1", apiToken
	cfg.Clusters = config.TokensOf(map[string]string{"prod-eu": euToken, "prod-us": usToken})
	cfg.OIDC = config.OIDC{Audience: "ripcord-test"}
	log := testlog.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.New(ctx, cfg, app.Options{Logger: log, CommitTimeout: testserve.CommitTimeout})
	if err != nil {
		cancel()
		t.Fatalf("start the server: %v", err)
	}
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	for try := 0; ; try++ {
		if ln, err = net.Listen("tcp", addr); err == nil || try == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond) // the old listener's port is being released
	}
	if err != nil {
		cancel()
		t.Fatalf("listen on %s: %v", addr, err)
	}
	s.addr = ln.Addr().String()
	s.URL = "http://" + s.addr
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	s.stop = func() {
		cancel()
		if err := <-done; err != nil {
			s.t.Errorf("the server stopped with an error: %v", err)
		}
	}
}

// Stop stops the server gracefully, as SIGTERM does.
func (s *server) Stop() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// enqueue queues an action as the recovery flow does, in a transaction.
func (s *server) enqueue(a clusteractions.Action) string {
	s.t.Helper()
	var id string
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		id, err = clusteractions.Enqueue(context.Background(), tx, a)
		return err
	})
	if err != nil {
		s.t.Fatalf("enqueue: %v", err)
	}
	return id
}

// action reads an action as stored.
func (s *server) action(id string) clusteractions.Stored {
	s.t.Helper()
	st, err := clusteractions.Get(context.Background(), s.db.Read, id)
	if err != nil {
		s.t.Fatalf("get action %s: %v", id, err)
	}
	return st
}

// audit is the audit trail of a release, oldest first.
func (s *server) audit(release string) []records.AuditEvent {
	s.t.Helper()
	evs, err := records.NewStore(s.db).Audit(context.Background(), records.AuditFilter{ReleaseID: release, Oldest: true, Limit: 500})
	if err != nil {
		s.t.Fatalf("audit of %s: %v", release, err)
	}
	return evs
}

// refused posts result for action id, as the EU cluster's agent, and
// wants a 409 whose error says want; what names the result in the failure.
func (s *server) refused(id string, result any, want, what string) {
	s.t.Helper()
	var refusal struct{ Error string }
	if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, result, &refusal); code != http.StatusConflict ||
		!strings.Contains(refusal.Error, want) {
		s.t.Errorf("%s: %d %q; want 409 saying %q", what, code, refusal.Error, want)
	}
}

// call sends a request with a bearer token and decodes the JSON answer.
func (s *server) call(method, path, token string, body any, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s answered %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// reportTwice posts the agent's result of action id twice, as an agent
// does that lost the first answer and repeats the result, and fails the
// test unless both are taken (200).
func (s *server) reportTwice(id string, res actionapi.Result) {
	s.t.Helper()
	for range 2 {
		var out map[string]any
		if code := s.call(http.MethodPost, actionsPath+"/"+id, euToken, res, &out); code != http.StatusOK {
			s.t.Fatalf("report %s: %d %v", res.Outcome, code, out)
		}
	}
}
