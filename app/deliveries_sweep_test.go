package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The sweep deletes finished deliveries received before the cutoff, with
// their payloads, over several chunks; it keeps newer ones and any still
// queued, however old.
func TestSweepDeletesFinishedDeliveriesPastRetention(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		// The server's own hourly sweep runs at start; with a century of
		// retention it deletes nothing this test ages, so only the call
		// below sweeps.
		ts := startServerWith(t, dbURL, Options{}, func(c *config.Config) { c.DeliveryRetention = 100 * 365 * 24 * time.Hour })
		body := githubtest.LoadPayload(t, "ping", "payload.json")
		old := sweepChunk + 5 // more than one chunk
		for i := range old + 3 {
			if code, resp := ts.deliver(t, "ping", fmt.Sprintf("d-%d", i), body, githubtest.Sign(testSecret, body)); code != 202 {
				t.Fatalf("delivery %d: %d %s", i, code, resp)
			}
		}
		waitFor(t, "every delivery to be worked", 30*time.Second, func() bool { return ts.countQueued(t) == 0 })
		ctx := context.Background()
		longAgo := store.Micros(time.Now().Add(-30 * 24 * time.Hour))
		// The first `old` deliveries were received a month ago; one of them
		// is still queued (a retry pending) and must stay.
		for i := range old {
			if _, err := ts.db.Write.ExecContext(ctx, `UPDATE deliveries SET received_at = $1 WHERE id = $2`, longAgo, fmt.Sprintf("d-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ts.db.Write.ExecContext(ctx, `UPDATE deliveries SET state = 'queued', attempts = 2 WHERE id = 'd-0'`); err != nil {
			t.Fatal(err)
		}
		n, err := sweepDeliveries(ctx, ts.db, time.Now().Add(-14*24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if n != old-1 {
			t.Errorf("swept %d deliveries, want %d", n, old-1)
		}
		var left []string
		rows, err := ts.db.Read.QueryContext(ctx, `SELECT id FROM deliveries ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			left = append(left, id)
		}
		rows.Close()
		want := fmt.Sprint([]string{"d-0", fmt.Sprintf("d-%d", old), fmt.Sprintf("d-%d", old+1), fmt.Sprintf("d-%d", old+2)})
		if fmt.Sprint(left) != want {
			t.Errorf("deliveries left %v, want %s", left, want)
		}
		if ts.db.Dialect == store.SQLite {
			var bodies int
			if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM delivery_bodies`).Scan(&bodies); err != nil {
				t.Fatal(err)
			}
			if bodies != len(left) {
				t.Errorf("%d payloads left for %d deliveries", bodies, len(left))
			}
		}
	})
}
