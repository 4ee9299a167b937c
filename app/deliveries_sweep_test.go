package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The sweep deletes finished deliveries received before the cutoff, with
// their payloads, over several chunks; it keeps newer ones and any still
// queued, however old.
func TestSweepDeletesFinishedDeliveriesPastRetention(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
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
		// The server's sweep at start also fails stranded deliveries: on a
		// loaded machine it may run late, after d-0 is made stranded below,
		// and fail it, so that the call below deletes it.
		waitFor(t, "the server's sweep at start", 30*time.Second, func() bool {
			var n int
			err := ts.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = 'deliveries_sweep' AND state = 'completed'`).Scan(&n)
			return err == nil && n > 0
		})
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

// A retry whose failure could not be written at its last attempt (the
// database was down) leaves its delivery queued, with the attempts before,
// and no job left to try it: River discarded the job, and its cleaner
// deletes it later. The deliveries sweep ends such a delivery failed and
// says why. It leaves alone a delivery whose retry is still to come, and
// one never attempted however old: the drain takes it (it is the queue).
func TestSweepFailsADeliveryWhoseRetriesEndedUnrecorded(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		always := &scriptedHandler{failures: 1 << 30}
		// The retry River schedules is an hour away: the test plays what
		// happens at the end of the last attempt.
		ts := startServer(t, dbURL, Options{Handlers: []EventHandler{always}, DeliveryMaxAttempts: 2, RetryBase: time.Hour})
		ctx := context.Background()
		body := githubtest.LoadPayload(t, "ping", "payload.json")
		for _, id := range []string{"lost", "cleaned", "pending"} {
			if code, resp := ts.deliver(t, "ping", id, body, githubtest.Sign(testSecret, body)); code != 202 {
				t.Fatalf("%s: %d %s", id, code, resp)
			}
		}
		waitFor(t, "the first attempts to fail", 30*time.Second, func() bool {
			for _, id := range []string{"lost", "cleaned", "pending"} {
				if ts.delivery(t, id).Attempts != 1 {
					return false
				}
			}
			return true
		})
		byDelivery := `kind = 'delivery' AND ` + store.RiverJobArg(ts.db.Dialect, "delivery_id") + ` = $1`
		// lost: the last attempt failed, its failure was not written, and
		// River discarded the job.
		if _, err := ts.db.Write.ExecContext(ctx, `UPDATE river_job SET state = 'discarded', finalized_at = CURRENT_TIMESTAMP WHERE `+byDelivery,
			"lost"); err != nil {
			t.Fatal(err)
		}
		// cleaned: the same, and River's cleaner has deleted the job since.
		if res, err := ts.db.Write.ExecContext(ctx, `DELETE FROM river_job WHERE `+byDelivery, "cleaned"); err != nil {
			t.Fatal(err)
		} else if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("deleted %d retry jobs of cleaned, want 1", n)
		}
		// waiting: stored a month ago and never attempted (the drain was
		// stopped, as when the server was down).
		ts.drain.Stop(context.Background())
		if code, resp := ts.deliver(t, "ping", "waiting", body, githubtest.Sign(testSecret, body)); code != 202 {
			t.Fatalf("waiting: %d %s", code, resp)
		}
		if _, err := ts.db.Write.ExecContext(ctx, `UPDATE deliveries SET received_at = $1 WHERE id = 'waiting'`,
			store.Micros(time.Now().Add(-30*24*time.Hour))); err != nil {
			t.Fatal(err)
		}

		job := &river.Job[DeliverySweepArgs]{JobRow: &rivertype.JobRow{Kind: DeliverySweepArgs{}.Kind()}}
		if err := (&deliverySweepWorker{s: ts.Server}).Work(ctx, job); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"lost", "cleaned"} {
			d := ts.delivery(t, id)
			if d.State != DeliveryFailed || d.Attempts != 1 || !contains(d.LastError, "upstream said no") || !contains(d.LastError, "no retry") {
				t.Errorf("%s: %s after %d attempts with last_error %q; want failed, saying no retry is left and the last error", id, d.State, d.Attempts, d.LastError)
			}
		}
		if d := ts.delivery(t, "pending"); d.State != DeliveryQueued || d.Attempts != 1 {
			t.Errorf("pending, whose retry is scheduled: %s after %d attempts (%s), want queued", d.State, d.Attempts, d.LastError)
		}
		if d := ts.delivery(t, "waiting"); d.State != DeliveryQueued || d.Attempts != 0 {
			t.Errorf("waiting, never attempted: %s after %d attempts (%s), want queued for the drain", d.State, d.Attempts, d.LastError)
		}
	})
}
