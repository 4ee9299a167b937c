package app

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// PostgreSQL on a full disk lets a drain round complete the deliveries it
// holds (UPDATEs of rows in place find room in their pages) while every
// write that needs a new block is refused. Such a round proves nothing of
// the disk: the outage a refused write started must last (before, the
// round logged "the database is back" while deliveries were still refused).
func TestPostgresDrainRoundOnAFullDiskDoesNotEndTheOutage(t *testing.T) {
	t.Parallel()
	dbURL, disk := testdb.PostgresOnSmallDisk(t)
	logs := &syncBuffer{}
	ts := startServer(t, dbURL, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	// The installation is stored once: the held deliveries of it again
	// write their rows over in place, as a full disk allows.
	ts.deliverSettled(t, "installation", "first", githubtest.LoadPayload(t, "installation", "created.payload.json"))
	// Deliveries pruned and vacuumed, as in a database that ran a while:
	// their pages have room, and an update in place needs no new block.
	ts.holdDeliveries(t, "pruned", 6)
	ts.holdDeliveries(t, "held", 3) // queued, the drain stopped
	for _, q := range []string{`DELETE FROM deliveries WHERE id LIKE 'pruned-%'`, `VACUUM`} {
		if _, err := ts.db.Write.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	disk.Fill()
	defer disk.Free()

	ping := githubtest.LoadPayload(t, "ping", "payload.json")
	if code, resp := ts.deliver(t, "ping", "full-0", ping, githubtest.Sign(testSecret, ping)); code != 503 {
		t.Fatalf("delivery on a full disk: %d %q, want 503", code, resp)
	}
	if !ts.health.Down() {
		t.Fatalf("no outage after a delivery refused on a full disk:\n%s", logs.String())
	}

	d := newDrainer(ts.drain.runner, ts.health, ts.log)
	if n := d.round(); n == 0 {
		t.Fatalf("the drain round on the full disk took no delivery (%d queued):\n%s", ts.countQueued(t), logs.String())
	}
	if !ts.health.Down() || strings.Contains(logs.String(), "the database is back") {
		t.Errorf("a drain round on a full disk reported the outage over:\n%s", logs.String())
	}
	if code, resp := ts.deliver(t, "ping", "full-1", ping, githubtest.Sign(testSecret, ping)); code != 503 {
		t.Errorf("delivery after the drain round, disk still full: %d %q, want 503", code, resp)
	}
}
