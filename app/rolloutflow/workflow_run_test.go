package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/pipeline"
)

// GitHub answers a dispatch with the run's id and the executor stores it
// in the transaction after, so the run's first event can be worked in
// between. While a batch of the repository is being dispatched, an event
// of a run no batch knows fails (and is retried) rather than being
// ignored; once the id is stored, the same event moves the batch; with no
// dispatch in flight, an unknown run is ignored.
func TestRunEventDuringADispatchIsRetriedNotLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", "", 0)
	h.start(nil)
	ctx := context.Background()
	db := h.x.deps.DB
	ref := Ref{Kind: KindDeploy, Stage: 0, Pass: 0, Batch: 0}
	var between func()
	handle := func(runID int64) (pipeline.Commit, error) {
		body, _ := json.Marshal(map[string]any{"action": "completed",
			"workflow_run": map[string]any{"id": runID, "status": "completed", "conclusion": "success"},
			"repository":   map[string]any{"full_name": testRepo}})
		return runHandler{x: h.x, afterDispatchingRead: between}.Handle(ctx, pipeline.Delivery{Event: "workflow_run", Body: body})
	}

	if c, err := handle(4242); err != nil || c != nil {
		t.Fatalf("unknown run with no dispatch in flight: commit %v, err %v; want it ignored", c != nil, err)
	}
	err := db.InTx(ctx, func(tx *sql.Tx) error {
		_, err := claimBatch(ctx, tx, h.id, ref, "batch-under-test", h.clock.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := handle(4242)
	if err == nil || !strings.Contains(err.Error(), "being dispatched") || pipeline.IsPermanent(err) {
		t.Fatalf("unknown run while a batch is dispatching: commit %v, err %v; want a retryable error", c != nil, err)
	}

	// The executor stores the run's id while the handler is between its
	// reads: the event must still move the batch, now or on its retry,
	// never be ignored.
	between = func() {
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			return setBatch(ctx, tx, h.id, ref, 4242, RunQueued, "", h.clock.Now())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if c, err := handle(4242); c == nil && (err == nil || pipeline.IsPermanent(err)) {
		t.Fatalf("the run's id stored while the event was worked: commit %v, err %v; want a commit or a retry", c != nil, err)
	}
	between = nil
	if c, err := handle(4242); err != nil || c == nil {
		t.Fatalf("the same event once the run id is stored: commit %v, err %v; want a commit", c != nil, err)
	}
}
