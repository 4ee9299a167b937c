package app

import (
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	// Not parallel: the file size limit binds the whole process, so
	// every other test's writes.
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
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
	t.Parallel()
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
	// Polled as an orchestrator does, over three of the drain's rounds. The
	// disk is kept full: a temporary file PostgreSQL removes (a sort that
	// spilled when the disk filled) gives blocks back, and a disk with room
	// for the probe is rightly ready.
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for end := time.Now().Add(3 * drainPoll); time.Now().Before(end); <-poll.C {
		disk.Fill()
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

// SQLite on a full disk: a delivery the intake cannot store is refused
// 503 (GitHub redelivers it), never answered 500, nor 202 and then lost;
// every delivery acknowledged, before or during the outage (a commit can
// still fit in blocks the log already has), is stored and worked once
// there is room again, without a restart.
func TestSQLiteFullDiskAcknowledgesOnlyWhatItStores(t *testing.T) {
	t.Parallel()
	dbURL, disk := testdb.SQLiteOnSmallDisk(t)
	logs := &syncBuffer{}
	ts := startServer(t, dbURL, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	// GitHub's ping, and one padded to 64 kB that does not compress, so
	// that the blocks the log already has are soon used up.
	small := githubtest.LoadPayload(t, "ping", "payload.json")
	var ev map[string]any
	if err := json.Unmarshal(small, &ev); err != nil {
		t.Fatal(err)
	}
	pad := make([]byte, 32<<10)
	if _, err := crand.Read(pad); err != nil {
		t.Fatal(err)
	}
	ev["zen"] = hex.EncodeToString(pad)
	large, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	deliver := func(id string) (int, string) {
		ping := small
		if strings.HasPrefix(id, "full-large-") {
			ping = large
		}
		return outagePost(ts.URL+"/api/github/hook", "", map[string]string{"X-GitHub-Event": "ping",
			"X-GitHub-Delivery": id, "X-Hub-Signature-256": githubtest.Sign(testSecret, ping)}, ping)
	}
	var acked, refused []string
	for i := range 5 {
		id := fmt.Sprintf("before-%d", i)
		if code, resp := deliver(id); code != http.StatusAccepted {
			t.Fatalf("delivery %s before the disk is full: %d %q", id, code, resp)
		}
		acked = append(acked, id)
	}
	disk.Fill()
	defer disk.Free()
	for i := 0; len(refused) < 5 && i < 1000; i++ {
		id := fmt.Sprintf("full-small-%d", i)
		if i >= 20 {
			id = fmt.Sprintf("full-large-%d", i)
		}
		switch code, resp := deliver(id); code {
		case http.StatusAccepted:
			acked = append(acked, id)
		case http.StatusServiceUnavailable:
			refused = append(refused, id)
		default:
			t.Errorf("delivery %s on a full disk: %d %q, want 503 (or 202 if it was stored)", id, code, resp)
		}
	}
	if len(refused) == 0 {
		t.Fatal("no delivery was refused on the full disk: the disk is not full for the intake")
	}
	if !strings.Contains(logs.String(), "the database is unavailable") {
		t.Errorf("no outage logged:\n%s", logs.String())
	}

	disk.Free()
	waitFor(t, "/readyz to answer 200 once the disk has room", 10*time.Second, func() bool {
		code, _ := outageGet(ts.URL + "/readyz")
		return code == http.StatusOK
	})
	for _, id := range refused { // GitHub's redelivery
		if code, resp := deliver(id); code != http.StatusAccepted {
			t.Errorf("redelivery of %s: %d %q, want 202", id, code, resp)
		}
	}
	ts.waitSettled(t)
	for _, id := range append(acked, refused...) {
		var state string
		var count int
		if err := ts.db.Read.QueryRow(`SELECT state, processed_count FROM deliveries WHERE id = $1`, id).Scan(&state, &count); err != nil {
			t.Errorf("delivery %s, acknowledged, is not stored: %v", id, err)
			continue
		}
		if state == "failed" || count > 1 {
			t.Errorf("delivery %s: state %s, worked %d times", id, state, count)
		}
	}
	if n := ts.countDeliveries(t); n != len(acked)+len(refused) {
		t.Errorf("%d deliveries stored, want %d", n, len(acked)+len(refused))
	}
	t.Logf("on the full disk: %d acknowledged, %d refused", len(acked)-5, len(refused))
}
