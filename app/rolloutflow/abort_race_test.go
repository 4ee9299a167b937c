package rolloutflow

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// An abort accepted while a tick is about to dispatch a batch (it read
// the rollout before the abort was stored) must stop that dispatch: the
// operator was told the rollout is aborted, and no batch may start after.
func TestAnAbortDuringADispatchStopsIt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.hold = true
		h.start(nil)
		aborted := false
		// The first step leaves the queue, starts the canary's stage and
		// dispatches its batch: the abort comes after its read.
		h.x.afterInputs = func(id string) {
			if aborted {
				return
			}
			aborted = true
			if _, err := h.x.abort(ctx, id, "bob", "wrong version"); err != nil {
				t.Fatalf("abort: %v", err)
			}
		}
		if err := h.x.Tick(ctx, h.id, false); err != nil && !errors.Is(err, errMoved) {
			t.Fatalf("tick: %v", err)
		}
		if !aborted {
			t.Fatal("the hook did not abort")
		}
		h.x.afterInputs = nil
		h.tick() // the abort's tick, or the job retried
		if n := len(h.gh.Dispatches(testRepo)); n != 0 {
			t.Errorf("%d batches dispatched after the abort was accepted, want none", n)
		}
		// The abort was accepted in the queue and answered "nothing was
		// deployed": so it must be.
		if r := h.rollout(); r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "before it started") {
			t.Errorf("status %s (%s) after the abort, want failed before it started", r.Machine.Status, r.Machine.Failure)
		}
	})
}

// An abort that read the rollout in the queue, while a tick took it out of
// the queue and dispatched its first batch before the abort was stored,
// must not answer "nothing was deployed": the canary's batch went out.
func TestAnAbortAfterATickDispatchedDoesNotSayNothingWasDeployed(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.hold = true
		h.start(nil)
		h.x.beforeAbortMark = func(string) {
			h.x.beforeAbortMark = nil
			h.tick()
		}
		reply, err := h.x.abort(ctx, h.id, "bob", "wrong version")
		if err != nil {
			t.Fatalf("abort: %v", err)
		}
		if n := len(h.gh.Dispatches(testRepo)); n != 1 {
			t.Fatalf("%d batches dispatched by the tick before the abort was stored, want the canary's", n)
		}
		if strings.Contains(reply, "nothing was deployed") {
			t.Errorf("abort answered %q while the canary's batch was dispatched", reply)
		}
		h.tick()
		if r := h.rollout(); r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "aborted by @bob") ||
			strings.Contains(r.Machine.Failure, "before it started") {
			t.Errorf("status %s (%s) after the abort, want failed by the abort, after it started", r.Machine.Status, r.Machine.Failure)
		}
	})
}

// An abort of a rollout that ended after the abort read it is refused:
// the operator is not told on_failure applies to a rollout that succeeded.
func TestAnAbortOfARolloutThatEndedMeanwhileIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.start(nil)
	h.x.beforeAbortMark = func(string) {
		h.x.beforeAbortMark = nil
		if r := h.run(nil); r.Machine.Status != Succeeded {
			t.Fatalf("status %s (%s), want the rollout to succeed before the abort is stored", r.Machine.Status, r.Machine.Failure)
		}
	}
	reply, err := h.x.abort(context.Background(), h.id, "bob", "too late")
	var refused *Refused
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "has ended") {
		t.Errorf("abort of a rollout that succeeded meanwhile: %q, %v; want refused, it has ended", reply, err)
	}
	if r := h.rollout(); r.AbortBy != "" {
		t.Errorf("abort_by %q stored on a rollout that had ended", r.AbortBy)
	}
}

// An abort stored after a tick committed a batch's claim, but before it
// sent the dispatch, is accepted (the claim's save did not lose to it):
// that batch must not go out after the operator was told the rollout is
// aborted.
func TestAnAbortBetweenAClaimAndItsDispatchStopsIt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		h := newHarnessOn(t, dbURL, "rollback-wave", "", time.Minute)
		h.hold = true
		h.start(nil)
		h.x.afterClaim = func(id string) {
			h.x.afterClaim = nil
			if _, err := h.x.abort(ctx, id, "bob", "wrong version"); err != nil {
				t.Fatalf("abort: %v", err)
			}
		}
		h.tick()
		if h.x.afterClaim != nil {
			t.Fatal("no batch was claimed")
		}
		h.tick()
		if n := len(h.gh.Dispatches(testRepo)); n != 0 {
			t.Errorf("%d dispatches after the abort was accepted, want none", n)
		}
		r := h.rollout()
		if r.Machine.Phase != PhaseDone || !strings.Contains(r.Machine.Failure, "aborted by @bob") {
			t.Errorf("rollout %s in phase %s (%s), want ended by the abort", r.Machine.Status, r.Machine.Phase, r.Machine.Failure)
		}
		if ds, err := listDispatched(ctx, h.x.deps.DB.Read, h.id); err != nil || len(ds) != 0 {
			t.Errorf("batches %+v (%v), want none: nothing went out, nothing to roll back", ds, err)
		}
	})
}
