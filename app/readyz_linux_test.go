package app

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// On SQLite /readyz must say when the database file cannot be written (a
// full disk, here a file size limit of one byte on this process): reads
// and pings still work then, and a server that acknowledges nothing must
// not be reported ready. Once writes work again it is ready again, without
// a restart.
func TestSQLiteReadyzSaysWhenTheFileCannotBeWritten(t *testing.T) {
	ts := startServer(t, testdb.URL(t, "sqlite"), Options{})
	if code, body := outageGet(ts.URL + "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before: %d %q", code, body)
	}
	testdb.SetFileSizeLimit(t, 0, 1)
	lifted := false
	lift := func() {
		if !lifted {
			testdb.SetFileSizeLimit(t, 0, ^uint64(0))
			lifted = true
		}
	}
	defer lift()
	code, body := outageGet(ts.URL + "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "database") || !strings.Contains(body, "written") {
		t.Errorf("/readyz while the database cannot be written: %d %q, want 503 saying the database cannot be written", code, body)
	}
	lift()
	waitFor(t, "/readyz to answer 200 again", 10*time.Second, func() bool {
		code, _ := outageGet(ts.URL + "/readyz")
		return code == http.StatusOK
	})
}

// PostgreSQL on a full disk answers pings and reads, and refuses every
// write that needs a new block (SQLSTATE 53100): every delivery. /readyz
// must say so, deliveries must be refused 503 as in any outage, and the
// outage must be logged once and last until there is room again: the
// drain's rounds and /readyz's reads, which work all along, must not
// report it over (before, /readyz answered ready and each of its calls, and
// each drain round, logged "the database is back" between the refusals).
func TestPostgresFullDiskIsAnOutage(t *testing.T) {
	dbURL, disk := testdb.PostgresOnSmallDisk(t)
	logs := &syncBuffer{}
	ts := startServer(t, dbURL, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if code, body := outageGet(ts.URL + "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before: %d %q", code, body)
	}
	disk.Fill()
	defer disk.Free()

	ping := githubtest.LoadPayload(t, "ping", "payload.json")
	deliver := func(id string) (int, string) {
		return outagePost(ts.URL+"/api/github/hook", "", map[string]string{"X-GitHub-Event": "ping",
			"X-GitHub-Delivery": id, "X-Hub-Signature-256": githubtest.Sign(testSecret, ping)}, ping)
	}
	for i := range 3 {
		if code, resp := deliver(fmt.Sprintf("full-%d", i)); code != http.StatusServiceUnavailable {
			t.Errorf("delivery %d on a full disk: %d %q, want 503", i, code, resp)
		}
	}
	// Polled as an orchestrator does, over three of the drain's rounds.
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for end := time.Now().Add(3 * drainPoll); time.Now().Before(end); <-poll.C {
		code, body := outageGet(ts.URL + "/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot be written") || !strings.Contains(body, "disk is full") {
			t.Fatalf("/readyz on a full disk: %d %q, want 503 saying the database cannot be written, its disk is full", code, body)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "the database is unavailable"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, out)
	}
	if strings.Contains(out, "the database is back") {
		t.Errorf("the outage was reported over while the disk was still full:\n%s", out)
	}
	if n := strings.Count(out, "store webhook delivery"); n > 0 {
		t.Errorf("%d errors logged for deliveries refused on a full disk, want none beside the outage:\n%s", n, out)
	}

	disk.Free()
	waitFor(t, "/readyz to answer 200 once the disk has room", 10*time.Second, func() bool {
		code, _ := outageGet(ts.URL + "/readyz")
		return code == http.StatusOK
	})
	if code, resp := deliver("full-after"); code != http.StatusAccepted {
		t.Errorf("a delivery once the disk has room: %d %q, want 202", code, resp)
	}
	if !strings.Contains(logs.String(), "the database is back") {
		t.Errorf("the end of the outage was not logged:\n%s", logs.String())
	}
}
