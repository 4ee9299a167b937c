package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/rollout"
)

// The rollout ahead of another is the oldest of its app and environment
// that has not ended; rollouts started in the same microsecond go by id.
func TestAheadIsTheOldestUnfinishedRolloutOfTheEnvironment(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
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
	testdb.Each(t, func(t *testing.T, dbURL string) {
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
	testdb.Each(t, func(t *testing.T, dbURL string) {
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
