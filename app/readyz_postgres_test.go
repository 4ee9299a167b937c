package app

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// On PostgreSQL /readyz must say when the database takes no writes: a
// standby (what a failover leaves behind an address that still points at
// the old primary) or default_transaction_read_only answer pings and reads
// as before, while every delivery and fact fails. Here the database is made
// read-only for new sessions and the server's sessions are ended, so its
// pool reconnects read-only; then writes are given back.
// readOnlyPostgres is a fresh PostgreSQL test database and what makes it
// read-only or writable again: default_transaction_read_only for new
// sessions, and the sessions open on it ended, so pools reconnect as such.
func readOnlyPostgres(t *testing.T) (dbURL string, readOnly func(on bool)) {
	t.Helper()
	dbURL = testdb.MigratedURL(t, "postgres")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := sql.Open("pgx", os.Getenv(testdb.PostgresEnv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return dbURL, func(on bool) {
		t.Helper()
		v := "off"
		if on {
			v = "on"
		}
		ctx := context.Background()
		if _, err := admin.ExecContext(ctx, "ALTER DATABASE "+name+" SET default_transaction_read_only = "+v); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPostgresReadyzSaysWhenTheDatabaseIsReadOnly(t *testing.T) {
	t.Parallel()
	dbURL, readOnly := readOnlyPostgres(t)
	ts := startServer(t, dbURL, Options{})
	if code, body := outageGet(ts.URL + "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before: %d %q", code, body)
	}
	readOnly(true)
	defer readOnly(false)
	var code int
	var body string
	waitFor(t, "/readyz to answer after the sessions ended", 10*time.Second, func() bool {
		code, body = outageGet(ts.URL + "/readyz")
		return code == http.StatusOK || strings.Contains(body, "written") || strings.Contains(body, "read-only")
	})
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "database") || !strings.Contains(body, "read-only") {
		t.Errorf("/readyz on a read-only database: %d %q, want 503 saying the database is read-only", code, body)
	}
	// A delivery is refused as while the database is down: 503, nothing stored.
	ping := githubtest.LoadPayload(t, "ping", "payload.json")
	if code, resp := outagePost(ts.URL+"/api/github/hook", "", map[string]string{"X-GitHub-Event": "ping",
		"X-GitHub-Delivery": "read-only-1", "X-Hub-Signature-256": githubtest.Sign(testSecret, ping)}, ping); code != http.StatusServiceUnavailable {
		t.Errorf("a delivery while the database is read-only: %d %q, want 503", code, resp)
	}
	readOnly(false)
	waitFor(t, "/readyz to answer 200 again", 10*time.Second, func() bool {
		code, _ := outageGet(ts.URL + "/readyz")
		return code == http.StatusOK
	})
}

// Writes refused by a read-only PostgreSQL are the database being
// unavailable, as when it is down: the deliveries are refused 503 and the
// outage is logged as such, not as an error per delivery.
func TestPostgresReadOnlyIsAnOutage(t *testing.T) {
	t.Parallel()
	dbURL, readOnly := readOnlyPostgres(t)
	logs := &syncBuffer{}
	ts := startServer(t, dbURL, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	// An answer means Run has started the job queue: its sessions are not
	// ended while it starts.
	if code, body := outageGet(ts.URL + "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before: %d %q", code, body)
	}
	readOnly(true)
	defer readOnly(false)
	ping := githubtest.LoadPayload(t, "ping", "payload.json")
	for i := range 5 {
		code, resp := outagePost(ts.URL+"/api/github/hook", "", map[string]string{"X-GitHub-Event": "ping",
			"X-GitHub-Delivery": fmt.Sprintf("read-only-%d", i), "X-Hub-Signature-256": githubtest.Sign(testSecret, ping)}, ping)
		if code != http.StatusServiceUnavailable {
			t.Errorf("delivery %d while the database is read-only: %d %q, want 503", i, code, resp)
		}
	}
	out := logs.String()
	if !strings.Contains(out, "the database is unavailable") {
		t.Errorf("no outage logged:\n%s", out)
	}
	if n := strings.Count(out, "store webhook delivery"); n > 0 {
		t.Errorf("%d errors logged for deliveries refused by a read-only database, want none beside the outage:\n%s", n, out)
	}
}
