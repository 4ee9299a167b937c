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
	testdb.Each(t, func(t *testing.T, dbURL string) {
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
