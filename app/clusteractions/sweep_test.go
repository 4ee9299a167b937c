package clusteractions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// sweepServer is the sweep as a server runs it: the worker Register adds and
// SweepJob, on a River client of their own, with a clock the test moves.
type sweepServer struct {
	t    *testing.T
	db   *store.DB
	rc   *river.Client[*sql.Tx]
	ran  <-chan *river.Event
	mu   sync.Mutex
	now  time.Time
	stop func()
}

// startSweepServer starts a server at now; its first sweep (RunOnStart) has
// run when it returns.
func startSweepServer(t *testing.T, db *store.DB, now time.Time) *sweepServer {
	t.Helper()
	s := &sweepServer{t: t, db: db, now: now}
	workers := river.NewWorkers()
	Register(pipeline.Deps{DB: db, Records: records.NewStore(db), River: func() *river.Client[*sql.Tx] { return s.rc },
		Workers: workers, Mux: http.NewServeMux(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: s.clock,
		Stopping: make(chan struct{})}, nil)
	var err error
	s.rc, err = river.NewClient(db.RiverDriver(), &river.Config{
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}}, Workers: workers,
		PeriodicJobs: []*river.PeriodicJob{SweepJob()}, FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		// The recovery flow's jobs an expiry queues are counted, not run.
		SkipUnknownJobCheck: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ran, cancelSub := s.rc.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	s.ran = ran
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.rc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.stop = func() { cancelSub(); cancel(); <-s.rc.Stopped() }
	t.Cleanup(s.stop)
	s.waitSweep()
	return s
}

func (s *sweepServer) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *sweepServer) advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

// waitSweep waits for the next sweep to end, and fails the test unless it
// completed.
func (s *sweepServer) waitSweep() {
	s.t.Helper()
	if err := s.awaitSweep(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sweepServer) awaitSweep() error {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-s.ran:
			if ev.Job.Kind != (ExpirySweepArgs{}).Kind() {
				continue // a job of the recovery flow the action queued: not this client's to run
			}
			if ev.Kind != river.EventKindJobCompleted {
				return fmt.Errorf("the sweep failed: %v", ev.Job.Errors)
			}
			return nil
		case <-timeout:
			return errors.New("no sweep ended within 30s")
		}
	}
}

// sweep queues the sweep as the periodic job does when its interval passed,
// and waits for it.
func (s *sweepServer) sweep() {
	s.t.Helper()
	if err := s.trySweep(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sweepServer) trySweep() error {
	if _, err := s.rc.Insert(context.Background(), ExpirySweepArgs{}, &river.InsertOpts{UniqueOpts: sweepUnique}); err != nil {
		return err
	}
	return s.awaitSweep()
}

// jobs counts the queued jobs of a kind, whatever their state.
func jobs(t *testing.T, db *store.DB, kind string) int {
	t.Helper()
	var n int
	if err := db.Read.QueryRow(`SELECT COUNT(*) FROM river_job WHERE kind = $1`, kind).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A claim whose agent died and never came back ends claim_expired through
// the sweep, with no poll of its cluster, once the claim timeout and the
// grace after the server's start have passed, and queues its episode's end
// once however often the sweep runs. The grace keeps its meaning: a server
// that was down is given claimGrace for the agent's report.
func TestTheSweepExpiresAClaimWhoseAgentNeverCameBack(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		_, id, claimed := claimedRollback(t, db, "lost-agent", "rb2")
		// The server restarts past the claim timeout; a new action is queued.
		restarted := claimed.Add(ClaimTimeout + time.Minute)
		fresh := enqueueRollback(t, db, "v3", "c3", "rb3")
		if _, err := db.Write.ExecContext(ctx, `UPDATE cluster_actions SET created_at = $1 WHERE id = $2`,
			store.Micros(restarted), fresh); err != nil {
			t.Fatal(err)
		}
		s := startSweepServer(t, db, restarted)
		if st, _ := Get(ctx, db.Read, id); st.State != StateClaimed {
			t.Fatalf("within the grace after a start the claim is %s, want claimed: the agent may report any moment", st.State)
		}

		s.advance(claimGrace)
		s.sweep()
		st, err := Get(ctx, db.Read, id)
		if err != nil || st.State != StateFailed || st.Result == nil || st.Result.ErrorType != errTypeClaimExpired ||
			st.Result.Agent != "lost-agent" {
			t.Fatalf("after the grace: %+v %+v %v; want failed, claim_expired by lost-agent", st, st.Result, err)
		}
		s.sweep() // nothing more to end
		evs, err := records.NewStore(db).Audit(ctx, records.AuditFilter{ReleaseID: "c2"})
		if err != nil || len(evs) != 1 || evs[0].Type != records.AuditRollbackFailed || evs[0].Data["error_type"] != errTypeClaimExpired {
			t.Errorf("audit %+v %v; want one rollback_failed, claim_expired", evs, err)
		}
		if n := jobs(t, db, "recovery_rollback_outcome"); n != 1 {
			t.Errorf("episode ends queued: %d, want 1", n)
		}
		// The action queued at the restart is within its time.
		if st, _ := Get(ctx, db.Read, fresh); st.State != StatePending {
			t.Errorf("the action within its time is %s, want pending", st.State)
		}
	})
}

// A sweep racing an agent's poll, which expires the cluster's actions in its
// own transaction first, ends the action once: one audit event, one end of
// its episode. On PostgreSQL the sweep reads the action pending, waits on the
// poll's row lock and must then leave it alone.
func TestASweepRacingAPollEndsTheActionOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.OpenMigrated(t, dbURL)
		id := enqueueRollback(t, db, "v2", "c2", "rb2")
		later := time.Now().UTC().Add(ClaimTimeout + time.Minute)
		s := startSweepServer(t, db, later.Add(-ClaimTimeout)) // queued just now: the first sweep ends nothing
		s.advance(ClaimTimeout)
		poller, _, _ := claimedRollbackStore(t, db)

		swept := make(chan error, 1)
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			// The poll's transaction expires the action first...
			if err := poller.expire(ctx, tx, "prod-eu", later); err != nil {
				return err
			}
			// ...while the sweep runs.
			go func() { swept <- s.trySweep() }()
			if db.Dialect == store.Postgres {
				waitLocked(t, db)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-swept; err != nil {
			t.Fatal(err)
		}
		if st, _ := Get(ctx, db.Read, id); st.State != StateFailed || st.Result.ErrorType != errTypeNotClaimed {
			t.Fatalf("action: %s %+v, want failed, not_claimed", st.State, st.Result)
		}
		evs, err := records.NewStore(db).Audit(ctx, records.AuditFilter{ReleaseID: "c2"})
		if err != nil || len(evs) != 1 {
			t.Errorf("audit of the failed release: %+v %v; want one rollback_failed", evs, err)
		}
		if n := jobs(t, db, "recovery_rollback_outcome"); n != 1 {
			t.Errorf("episode ends queued: %d, want 1", n)
		}
	})
}

// claimedRollbackStore is another server's store, started long ago.
func claimedRollbackStore(t *testing.T, db *store.DB) (*actionStore, *river.Client[*sql.Tx], time.Time) {
	t.Helper()
	rc := testdb.InsertOnlyRiver(t, db) // insert-only
	now := time.Now().UTC()
	return &actionStore{db: db, records: records.NewStore(db), river: func() *river.Client[*sql.Tx] { return rc },
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), started: now.Add(-time.Hour)}, rc, now
}

// waitLocked waits until a session waits for a row lock of cluster_actions:
// the sweep's update, behind the poll's transaction.
func waitLocked(t *testing.T, db *store.DB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE cluster_actions%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweep never waited for the poll's lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
