package store_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testnet"
)

// silentAfterFirst is a PostgreSQL server on loopback that answers its
// first connection (trust authentication, every query answered empty) and
// accepts every later one without ever answering it: a database that
// stops answering while ripcord runs (a network that drops packets, a
// server that hangs).
type silentAfterFirst struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newSilentAfterFirst(t *testing.T) *silentAfterFirst {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentAfterFirst{ln: ln}
	go s.serve()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			c.Close()
		}
	})
	return s
}

func (s *silentAfterFirst) url() string {
	return "postgres://ripcord@" + s.ln.Addr().String() + "/ripcord?sslmode=disable"
}

func (s *silentAfterFirst) serve() {
	for first := true; ; first = false {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		if first {
			go answer(c)
		}
	}
}

func answer(c net.Conn) {
	be := pgproto3.NewBackend(c, c)
	if _, err := be.ReceiveStartupMessage(); err != nil {
		return
	}
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if be.Flush() != nil {
		return
	}
	for {
		msg, err := be.Receive()
		if err != nil {
			return
		}
		switch msg.(type) {
		case *pgproto3.Query:
			be.Send(&pgproto3.EmptyQueryResponse{})
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			if be.Flush() != nil {
				return
			}
		case *pgproto3.Terminate:
			return
		}
	}
}

// A connection the pool opens for a caller without a deadline (the job
// queue's polls, `ripcord migrate`'s second connection) must give up when
// PostgreSQL does not answer, as a caller with a deadline does: without a
// connect timeout it waited for ever.
func TestPostgresConnectionWithoutDeadlineGivesUp(t *testing.T) {
	srv := newSilentAfterFirst(t)
	defer store.SetConnectTimeout(2 * time.Second)()
	ctx := context.Background()
	db, err := store.Open(ctx, srv.url())
	if err != nil {
		t.Fatalf("open against the first, answered connection: %v", err)
	}
	defer db.Close()
	held, err := db.Write.Conn(ctx) // the answered one: the next needs a new connection
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	done := make(chan error, 1)
	start := time.Now()
	go func() {
		c, err := db.Write.Conn(context.Background())
		if err == nil {
			err = c.PingContext(context.Background())
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a connection to a server that never answers succeeded")
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("gave up after %v, want about the connect timeout (2 s)", took)
		}
		if !store.Unavailable(err) {
			t.Errorf("the error does not say the database is unavailable: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a connection without a deadline still waits for PostgreSQL after 30 s: no connect timeout")
	}
}

// A start against a PostgreSQL that accepts the connection and never
// answers fails with one line that names the database, the address tried
// and the time waited.
func TestPostgresOpenThatNoOneAnswersSaysWhatWasTried(t *testing.T) {
	addr := testnet.Silent(t)
	defer store.SetConnectTimeout(time.Second)()
	start := time.Now()
	_, err := store.Open(context.Background(), "postgres://ripcord:hunter2@"+addr+"/ripcord?sslmode=disable")
	if err == nil {
		t.Fatal("open succeeded against a server that never answers")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("open gave up after %v, want about the connect timeout (1 s)", took)
	}
	msg := err.Error()
	for _, want := range []string{"database", addr, "no answer within 1s", "connect_timeout"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "hunter2") || strings.Contains(msg, "\n") {
		t.Errorf("the error shows the password or spans lines: %q", msg)
	}
}

// connect_timeout in the URL wins over the default.
func TestPostgresConnectTimeoutFromTheURL(t *testing.T) {
	addr := testnet.Silent(t)
	defer store.SetConnectTimeout(time.Minute)()
	start := time.Now()
	_, err := store.Open(context.Background(), "postgres://ripcord@"+addr+"/ripcord?sslmode=disable&connect_timeout=1")
	if err == nil {
		t.Fatal("open succeeded against a server that never answers")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("open gave up after %v, want about the URL's connect_timeout (1 s)", took)
	}
	if !strings.Contains(err.Error(), "no answer within 1s") {
		t.Errorf("the error does not name the URL's timeout: %v", err)
	}
}

// PGCONNECT_TIMEOUT set and empty (an env entry with no value) is no
// setting, for pgx as for libpq: the default applies. It used to take
// away every connect timeout.
func TestPostgresEmptyPGCONNECT_TIMEOUTKeepsTheDefault(t *testing.T) {
	addr := testnet.Silent(t)
	t.Setenv("PGCONNECT_TIMEOUT", "")
	defer store.SetConnectTimeout(time.Second)()
	start := time.Now()
	_, err := store.Open(context.Background(), "postgres://ripcord@"+addr+"/ripcord?sslmode=disable")
	if err == nil {
		t.Fatal("open succeeded against a server that never answers")
	}
	if took := time.Since(start); took > 5*time.Second || !strings.Contains(err.Error(), "no answer within 1s") {
		t.Errorf("open gave up after %v (%v), want the default connect timeout (1 s)", took, err)
	}
}

// PGCONNECT_TIMEOUT wins over the default, and the URL over it.
func TestPostgresConnectTimeoutFromTheEnvironment(t *testing.T) {
	addr := testnet.Silent(t)
	defer store.SetConnectTimeout(time.Minute)()
	for _, c := range []struct{ env, query, want string }{
		{"1", "", "no answer within 1s"},
		{"30", "&connect_timeout=2", "no answer within 2s"},
	} {
		t.Setenv("PGCONNECT_TIMEOUT", c.env)
		start := time.Now()
		_, err := store.Open(context.Background(), "postgres://ripcord@"+addr+"/ripcord?sslmode=disable"+c.query)
		if err == nil {
			t.Fatal("open succeeded against a server that never answers")
		}
		if took := time.Since(start); took > 6*time.Second || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PGCONNECT_TIMEOUT=%s, URL %q: open gave up after %v (%v), want %q", c.env, c.query, took, err, c.want)
		}
	}
}

// A connect_timeout from a PostgreSQL service file (service= in the URL,
// PGSERVICEFILE) is the user's own: the default no longer replaces it.
func TestPostgresConnectTimeoutFromAServiceFile(t *testing.T) {
	addr := testnet.Silent(t)
	services := filepath.Join(t.TempDir(), "pg_service.conf")
	if err := os.WriteFile(services, []byte("[ripcord]\nconnect_timeout=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGSERVICEFILE", services)
	defer store.SetConnectTimeout(20 * time.Second)()
	start := time.Now()
	_, err := store.Open(context.Background(), "postgres://ripcord@"+addr+"/ripcord?sslmode=disable&service=ripcord")
	if err == nil {
		t.Fatal("open succeeded against a server that never answers")
	}
	if took := time.Since(start); took > 6*time.Second || !strings.Contains(err.Error(), "no answer within 1s") {
		t.Errorf("open gave up after %v (%v), want the service file's connect_timeout (1 s)", took, err)
	}
}

// connect_timeout=0, in the URL or PGCONNECT_TIMEOUT, waits without limit,
// as README says, the start included: it used to give up after 10 s
// regardless. Here the caller's context is what ends the wait.
func TestPostgresConnectTimeoutZeroWaitsWithoutLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 11 s, past the 10 s the start used to give up after")
	}
	addr := testnet.Silent(t)
	defer store.SetConnectTimeout(time.Second)()
	t.Setenv("PGCONNECT_TIMEOUT", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(11*time.Second, cancel).Stop()
	_, err := store.Open(ctx, "postgres://ripcord@"+addr+"/ripcord?sslmode=disable")
	if err == nil {
		t.Fatal("open succeeded against a server that never answers")
	}
	if ctx.Err() == nil || strings.Contains(err.Error(), "no answer within") {
		t.Errorf("with connect_timeout 0 the start gave up on its own, before its caller did: %v", err)
	}
}
