package app

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// Two replicas behind a load balancer each commit a batch of deliveries
// that holds the same two (GitHub's redelivery of both, sent to the other
// replica), in the opposite order. Each insert waits for the other's
// uncommitted row of the delivery it reaches second: PostgreSQL ended one
// transaction as a deadlock, and every delivery of that batch, the ones
// only it held included, was answered with an error that GitHub does not
// retry. Here a third delivery that a transaction of the test holds makes
// both batches insert their first delivery before either reaches its
// second. Both must commit, and each delivery be stored once.
func TestReplicasCommittingOneDeliveryPairInOppositeOrdersBothCommit(t *testing.T) {
	t.Parallel()
	url := testdb.MigratedURL(t, "postgres")
	db := testdb.OpenMigrated(t, url)
	// One writer per replica: a server's writer commits one batch at a time.
	w, other := &groupWriter{db: db, timeout: testCommitTimeout}, &groupWriter{db: testdb.Open(t, url), timeout: testCommitTimeout}
	ctx := context.Background()
	write := func(id string) *pendingWrite {
		return &pendingWrite{d: Delivery{ID: id, Event: "push", ReceivedAt: time.Now().UTC()}, stored: []byte("{}"),
			state: DeliveryQueued}
	}
	hold, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if err := w.insertPostgres(ctx, hold, []*pendingWrite{write("held")}); err != nil {
		t.Fatal(err)
	}

	a := []*pendingWrite{write("x"), write("held"), write("y"), write("only-a")}
	b := []*pendingWrite{write("y"), write("held"), write("x"), write("only-b")}
	errs := make(chan error, 2)
	go func() { errs <- w.commit(a) }()
	go func() { errs <- other.commit(b) }()
	waitFor(t, "both batches to wait for the held delivery", 10*time.Second, func() bool {
		var n int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 2
	})
	if err := hold.Commit(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a replica's group commit failed: %v", err)
		}
	}
	for _, id := range []string{"x", "y", "held", "only-a", "only-b"} {
		var n int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("delivery %s stored %d times, want once", id, n)
		}
	}
	for _, id := range []string{"x", "y"} {
		inserted := 0
		for _, p := range append(a, b...) {
			if p.d.ID == id && p.inserted {
				inserted++
			}
		}
		if inserted != 1 {
			t.Errorf("delivery %s answered as new by %d replicas, want one (the other: duplicate)", id, inserted)
		}
	}
}
