package recoveryflow

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// startedArgs is a periodic job inserted on start in the same transaction
// as the sweep (River inserts every RunOnStart job of a start in one
// batch): once it is queued, the server's sweep insert was done or skipped.
type startedArgs struct{}

func (startedArgs) Kind() string { return "test_server_started" }

type idleWorker[T river.JobArgs] struct{ river.WorkerDefaults[T] }

func (idleWorker[T]) Work(context.Context, *river.Job[T]) error { return nil }

// startPeriodic starts a server's River client with the sweep's periodic
// job, as the server runs it, on a queue nobody works: the sweep it inserts
// stays queued, as behind a slow sweep. It waits for the start's inserts
// and stops the client.
func startPeriodic(t *testing.T, db *store.DB, starts int) {
	t.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, idleWorker[RerunSweepArgs]{})
	river.AddWorker(workers, idleWorker[startedArgs]{})
	started := river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
		func() (river.JobArgs, *river.InsertOpts) { return startedArgs{}, nil }, &river.PeriodicJobOpts{RunOnStart: true})
	rc, err := river.NewClient(db.RiverDriver(), &river.Config{
		Queues:       map[string]river.QueueConfig{"unworked": {MaxWorkers: 1}},
		Workers:      workers,
		PeriodicJobs: []*river.PeriodicJob{SweepJob(), started},
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-rc.Stopped() }()
	if err := rc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for queuedOfKind(t, db.Read, startedArgs{}.Kind()) < starts {
		if time.Now().After(deadline) {
			t.Fatalf("start %d: its periodic jobs were not inserted within 30s", starts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func queuedOfKind(t *testing.T, db *sql.DB, kind string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM river_job WHERE kind = $1`, kind).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A second server's start (or the first's restart, or the next interval of
// a sweep that runs long) while a sweep is still queued does not queue a
// second copy of it; once that sweep completed, the next start queues one.
func TestASweepIsNotQueuedTwice(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		db := testdb.OpenMigrated(t, dbURL)
		kind := RerunSweepArgs{}.Kind()
		startPeriodic(t, db, 1)
		if n := queuedOfKind(t, db.Read, kind); n != 1 {
			t.Fatalf("after the first start: %d sweeps queued, want 1", n)
		}
		startPeriodic(t, db, 2)
		if n := queuedOfKind(t, db.Read, kind); n != 1 {
			t.Fatalf("after a second start with the first sweep still queued: %d sweeps, want 1", n)
		}
		if _, err := db.Write.Exec(`UPDATE river_job SET state = 'completed', finalized_at = CURRENT_TIMESTAMP
			WHERE kind = $1`, kind); err != nil {
			t.Fatal(err)
		}
		startPeriodic(t, db, 3)
		if n := queuedOfKind(t, db.Read, kind); n != 2 {
			t.Errorf("after a start with the sweep completed: %d sweeps, want 2 (a completed one holds nothing back)", n)
		}
	})
}
