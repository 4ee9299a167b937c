package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollout"
)

// The rollout ahead of another is the oldest of its app and environment
// that has not ended; rollouts started in the same microsecond go by id.
func TestAheadIsTheOldestUnfinishedRolloutOfTheEnvironment(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db, add := rolloutsIn(t, dbURL)
		add("ro-a", "checkout", t0, PhaseDone)                       // ended: holds nobody
		b := add("ro-b", "checkout", t0.Add(time.Second), PhaseBake) // rolling out
		c := add("ro-c", "checkout", t0.Add(time.Second), PhaseQueue)
		d := add("ro-d", "checkout", t0.Add(2*time.Second), PhaseQueue)
		add("ro-0", "payments", t0, PhaseBake) // another app
		for _, tc := range []struct {
			r    Rollout
			want string
		}{
			{b, ""},
			{c, "rollout ro-b of release rel-ro-b"},
			{d, "rollout ro-b of release rel-ro-b"},
		} {
			got, err := ahead(ctx, db.Read, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ahead of %s = %q, want %q", tc.r.ID, got, tc.want)
			}
		}
		ros, err := listRollouts(ctx, db.Read, "checkout", "prod", true, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range ros {
			ids = append(ids, r.ID)
		}
		if want := "ro-d ro-c ro-b"; strings.Join(ids, " ") != want {
			t.Errorf("unfinished rollouts of checkout/prod: %s, want %s (newest first)", strings.Join(ids, " "), want)
		}
	})
}

// A rollout that failed after deploying holds the rollouts queued behind it
// in its app and environment, and only those; a hold set before keeps its
// reason. A rollout that deployed nothing holds nobody (deployed).
func TestAFailureAfterDeployingHoldsTheQueueBehind(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db, add := rolloutsIn(t, dbURL)
		failed := add("ro-a", "checkout", t0, PhaseDone)
		add("ro-b", "checkout", t0.Add(time.Second), PhaseQueue)
		add("ro-c", "checkout", t0.Add(2*time.Second), PhaseQueue)
		add("ro-d", "payments", t0.Add(time.Second), PhaseQueue) // another app
		if _, err := db.Write.ExecContext(ctx, `UPDATE rollouts SET hold = 'held before' WHERE id = 'ro-c'`); err != nil {
			t.Fatal(err)
		}
		err := db.InTx(ctx, func(tx *sql.Tx) error { return holdBehind(ctx, tx, failed) })
		if err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]string{"ro-a": "", "ro-b": "rollout ro-a of release rel-ro-a, ahead of it, failed after deploying",
			"ro-c": "held before", "ro-d": ""} {
			r, err := getRollout(ctx, db.Read, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Hold != want {
				t.Errorf("hold of %s = %q, want %q", id, r.Hold, want)
			}
		}
	})
	for _, tc := range []struct {
		runs map[Ref]Run
		want bool
	}{
		{nil, false},
		{map[Ref]Run{PrepareRef: {State: RunSuccess}}, false},
		{map[Ref]Run{PrepareRef: {State: RunSuccess}, {Kind: KindDeploy}: {State: RunDispatching}}, true},
	} {
		if got := deployed(tc.runs); got != tc.want {
			t.Errorf("deployed(%v) = %v, want %v", tc.runs, got, tc.want)
		}
	}
}

// rolloutsIn opens a migrated database at dbURL and returns it with a
// function that stores a rollout of app to prod with two stages, created at
// at, its machine in phase.
func rolloutsIn(t *testing.T, dbURL string) (*store.DB, func(id, app string, at time.Time, phase Phase) Rollout) {
	db := testdb.OpenMigrated(t, dbURL)
	plan := twoStages(rollout.Stop)
	return db, func(id, app string, at time.Time, phase Phase) Rollout {
		t.Helper()
		m := NewMachine(plan)
		m.Phase = phase
		return storeRollout(t, db, id, app, at, plan, m)
	}
}

// storeRollout stores rollout id of app to prod, created at at, with
// machine m.
func storeRollout(t *testing.T, db *store.DB, id, app string, at time.Time, plan *rollout.Plan, m Machine) Rollout {
	t.Helper()
	r := Rollout{ID: id, ReleaseID: "rel-" + id, Repository: "acme/checkout", App: app, Environment: "prod",
		Version: "v-" + id, Snapshot: Snapshot{Plan: plan}, Machine: m, CreatedAt: at}
	err := db.InTx(context.Background(), func(tx *sql.Tx) error {
		ok, err := insertRollout(context.Background(), tx, r)
		if err == nil && !ok {
			t.Fatalf("rollout %s not stored", id)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A tick of a queued rollout that read it before the rollout ahead failed,
// and found nothing ahead after, must not start it past the hold the
// failure set meanwhile: its save loses, and the retry sees the hold.
func TestAHoldSetDuringATickOfTheRolloutBehindIsNotBypassed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db, add := rolloutsIn(t, dbURL)
		failed := add("ro-a", "checkout", t0, PhaseDone)
		add("ro-b", "checkout", t0.Add(time.Second), PhaseQueue)
		stale, err := getRollout(ctx, db.Write, "ro-b") // the tick reads ro-b, no hold yet
		if err != nil {
			t.Fatal(err)
		}
		if err := db.InTx(ctx, func(tx *sql.Tx) error { return holdBehind(ctx, tx, failed) }); err != nil {
			t.Fatal(err)
		}
		// ro-a has ended: the tick finds nothing ahead and starts ro-b.
		in := inputs(stale.Snapshot.Plan, t0, nil)
		in.Hold = stale.Hold
		stale.Machine.Next(in)
		if stale.Machine.Phase == PhaseQueue {
			t.Fatalf("phase %s: the stale tick should have started ro-b", stale.Machine.Phase)
		}
		err = db.InTx(ctx, func(tx *sql.Tx) error { return saveMachine(ctx, tx, &stale, t0) })
		if !errors.Is(err, errMoved) {
			t.Fatalf("save of a tick that read ro-b before its hold: %v, want errMoved", err)
		}
		r, err := getRollout(ctx, db.Read, "ro-b")
		if err != nil {
			t.Fatal(err)
		}
		if r.Machine.Phase != PhaseQueue || r.Hold == "" {
			t.Errorf("ro-b in phase %s with hold %q, want held in the queue", r.Machine.Phase, r.Hold)
		}
	})
}

// A rollout that has left the queue holds every other rollout of its app
// and environment, even one whose created_at is older: a rollout's
// created_at is taken before its row is committed (on another replica,
// with another clock, or by a start job that committed late), so a
// rollout older by created_at may appear after a newer one has started
// deploying. Starting it then would deploy two versions to the same
// hosts, each wave undoing the other's.
func TestAheadIsARolloutAlreadyDeployingWhateverItsAge(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db, add := rolloutsIn(t, dbURL)
		late := add("ro-late", "checkout", t0, PhaseQueue) // committed after ro-b started
		add("ro-b", "checkout", t0.Add(time.Second), PhaseDeploy)
		add("ro-c", "checkout", t0.Add(2*time.Second), PhaseQueue)
		got, err := ahead(ctx, db.Read, late)
		if err != nil {
			t.Fatal(err)
		}
		if want := "rollout ro-b of release rel-ro-b"; got != want {
			t.Errorf("ahead of ro-late = %q, want %q (it deploys already)", got, want)
		}
	})
}

// End to end: r3's rollout starts deploying, then r2's rollout appears
// with an older created_at (its start committed late). r2's must wait in
// the queue behind r3's, not deploy v2 over the hosts r3's is on.
func TestALateOlderRolloutWaitsForTheOneDeploying(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.hold = true // r3's canary batch stays in flight
		h.clock.set(h.clock.Now().Add(time.Minute))
		r3 := h.startRelease("r3:prod-eu/prod", strings.Repeat("b", 40))
		h.tick()
		if r := h.rollout(); r.Machine.Phase != PhaseDeploy {
			t.Fatalf("r3's rollout is in %s, want deploy", r.Machine.Phase)
		}
		h.start(nil) // r2's rollout, queued behind r3's as things stand
		if _, err := h.x.deps.DB.Write.ExecContext(context.Background(), `UPDATE rollouts SET created_at = $1 WHERE id = $2`,
			store.Micros(r3.CreatedAt.Add(-time.Second)), h.id); err != nil {
			t.Fatal(err)
		}
		h.tick()
		r2 := h.rollout()
		if r2.Machine.Status != PausedQueue || !strings.Contains(r2.Machine.Paused, r3.ID) {
			t.Errorf("r2's rollout is %s (%s), want paused-queue behind %s", r2.Machine.Status, r2.Machine.Paused, r3.ID)
		}
		for _, d := range h.dispatches() {
			if strings.HasSuffix(d, " v2") {
				t.Errorf("r2's rollout dispatched %q while r3's deploys:\n%s", d, strings.Join(h.dispatches(), "\n"))
			}
		}
	})
}

// Two ticks that read the queue before either stores its move out of it
// must not both start: r3's tick reads the queue while r2's rollout is not
// stored yet (its start commits late, with an older created_at); r2's
// rollout is then stored, leaves the queue and deploys; r3's tick must not
// store its own start on top of that. It loses its save and, ticked again,
// waits behind r2's.
func TestTwoRolloutsNeverLeaveTheQueueTogether(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.hold = true
		h.clock.set(h.clock.Now().Add(time.Minute))
		r3 := h.startRelease("r3:prod-eu/prod", strings.Repeat("b", 40))
		var r2 string
		h.x.afterInputs = func(id string) {
			if id != r3.ID || r2 != "" {
				return
			}
			h.start(nil) // r2's rollout, stored late with an older created_at
			r2 = h.id
			if _, err := h.x.deps.DB.Write.ExecContext(ctx, `UPDATE rollouts SET created_at = $1 WHERE id = $2`,
				store.Micros(r3.CreatedAt.Add(-time.Second)), r2); err != nil {
				t.Fatal(err)
			}
			if err := h.x.Tick(ctx, r2, false); err != nil {
				t.Fatalf("tick of r2's rollout: %v", err)
			}
		}
		if err := h.x.Tick(ctx, r3.ID, false); err != nil && !errors.Is(err, errMoved) {
			t.Fatalf("tick of r3's rollout: %v", err)
		}
		if r2 == "" {
			t.Fatal("the hook did not run")
		}
		h.x.afterInputs = nil
		h.id = r3.ID
		h.tick() // as the job is retried
		if r := h.rollout(); r.Machine.Status != PausedQueue || !strings.Contains(r.Machine.Paused, r2) {
			t.Errorf("r3's rollout is %s (%s), want paused-queue behind %s", r.Machine.Status, r.Machine.Paused, r2)
		}
		var v2, v3 int
		for _, d := range h.dispatches() {
			v2 += boolInt(strings.HasSuffix(d, " v2"))
			v3 += boolInt(strings.HasSuffix(d, " v3"))
		}
		if v2 != 1 || v3 != 0 {
			t.Errorf("dispatches:\n%s\nwant r2's canary only: r3's rollout deployed beside it", strings.Join(h.dispatches(), "\n"))
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Two starts of one environment at once: r3's rollout is stored while
// r2's start is about to store its own. r2's rollout must not be told it
// runs (in the answer of POST /api/v1/rollouts, its status, its check
// run) while r3's, stored first, is ahead of it: its start reads the queue
// in the transaction that stores it, and its first tick agrees.
func TestTwoStartsAtOnceAreQueuedOneBehindTheOther(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		var r3 Rollout
		h.x.beforeCreateTx = func(string) {
			h.x.beforeCreateTx = nil
			r3 = h.startRelease("r3:prod-eu/prod", strings.Repeat("b", 40))
		}
		h.start(nil) // r2's rollout
		if r3.ID == "" {
			t.Fatal("the hook did not run")
		}
		if r3.Machine.Status == PausedQueue {
			t.Fatalf("r3's rollout, stored first, is %s (%s); want it to run", r3.Machine.Status, r3.Machine.Paused)
		}
		r2 := h.rollout()
		if r2.Machine.Status != PausedQueue || !strings.Contains(r2.Machine.Paused, r3.ID) {
			t.Errorf("r2's rollout started %s (%s), want paused-queue behind %s", r2.Machine.Status, r2.Machine.Paused, r3.ID)
		}
		if q := h.auditOf("paused-queue"); len(q) != 1 || !strings.Contains(q[0], r3.ID) {
			t.Errorf("r2's paused-queue audit lines %q, want one naming %s", q, r3.ID)
		}
		h.tick()
		if r := h.rollout(); r.Machine.Status != PausedQueue || !strings.Contains(r.Machine.Paused, r3.ID) {
			t.Errorf("r2's rollout after its first tick is %s (%s), want paused-queue behind %s", r.Machine.Status, r.Machine.Paused, r3.ID)
		}
	})
}

// Two starts at once, in earnest: r3's start runs while r2's has read the
// queue and not stored its rollout yet. It waits for r2's to be stored
// (for the queue's lock on PostgreSQL, the single writer on SQLite), and
// is then queued behind it; without the lock it read the queue without
// r2's rollout, and both were stored running.
func TestAStartWaitsForTheStartThatReadTheQueue(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.open("r3:prod-eu/prod", "v3")
		type started struct {
			r   Rollout
			err error
		}
		done := make(chan started, 1)
		waits0 := h.x.deps.DB.Write.Stats().WaitCount
		h.x.afterQueueRead = func(string) {
			h.x.afterQueueRead = nil
			go func() {
				r, err := h.x.start(ctx, configload.NewLoader(), StartArgs{ReleaseID: "r3:prod-eu/prod"})
				done <- started{r, err}
			}()
			// Until r3's start has run to its end, or waits: no signal
			// says a transaction waits but the database's own view.
			for !h.waitsForTheQueue(waits0) {
				select {
				case s := <-done:
					done <- s
					return
				default:
					time.Sleep(time.Millisecond)
				}
			}
		}
		h.start(nil) // r2's rollout
		r2 := h.rollout()
		s := <-done
		if s.err != nil {
			t.Fatalf("start of r3: %v", s.err)
		}
		if r2.Machine.Status == PausedQueue {
			t.Errorf("r2's rollout, whose start read the queue first, is %s (%s); want it to run", r2.Machine.Status, r2.Machine.Paused)
		}
		if r3 := s.r; r3.Machine.Status != PausedQueue || !strings.Contains(r3.Machine.Paused, r2.ID) {
			t.Errorf("r3's rollout started %s (%s), want paused-queue behind %s", r3.Machine.Status, r3.Machine.Paused, r2.ID)
		}
	})
}

// waitsForTheQueue reports whether a transaction of the harness's database
// waits for another's: for a rollout queue's lock on PostgreSQL, for the
// single writer on SQLite (waits0: the write pool's waits before).
func (h *harness) waitsForTheQueue(waits0 int64) bool {
	h.t.Helper()
	db := h.x.deps.DB
	if db.Dialect != store.Postgres {
		return db.Write.Stats().WaitCount > waits0
	}
	var waiting bool
	err := db.Read.QueryRowContext(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_locks
		WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting)
	if err != nil {
		h.t.Fatal(err)
	}
	return waiting
}
