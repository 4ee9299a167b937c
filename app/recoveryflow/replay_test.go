package recoveryflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// withRunTimes is delivery d with the run's created_at, run_started_at
// and updated_at in its payload replaced.
func withRunTimes(t *testing.T, d pipeline.Delivery, created, started, updated time.Time) pipeline.Delivery {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(d.Body, &m); err != nil {
		t.Fatal(err)
	}
	wr := m["workflow_run"].(map[string]any)
	wr["created_at"], wr["run_started_at"], wr["updated_at"] = created.Format(time.RFC3339), started.Format(time.RFC3339),
		updated.Format(time.RFC3339)
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d.Body = body
	return d
}

// A failure is decided (an alert: no retries, nothing to roll back to),
// its episode is swept past retention, and the very payload GitHub signed
// is posted again under a new delivery id: without its episode, it would
// be a new failure of a run no episode follows and be decided again. It
// is ignored, and the log says why. A failure GitHub sends now of a run
// created long ago (a late re-run) is still decided.
func TestReplayOfAFailureWhoseEpisodeWasSweptIsIgnored(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		ctx := context.Background()
		fake := githubtest.NewServer(t)
		clock := ghclient.NewStepClock(time.Now().UTC())
		fake.SetClock(clock.Now)
		sha := fake.PutFile("acme/checkout", "main", ".github/ripcord.yml", onceConfig+"recovery: {max_retries: 0}\n")
		const run, lateRun = 91, 92
		fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: run, HeadSHA: sha})
		fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: lateRun, HeadSHA: sha})
		f := workerFlow(t, dbURL, fake, clock, nil)
		var log strings.Builder
		f.deps.Log = slog.New(slog.NewTextHandler(&log, nil))
		h := &workflowRunHandler{f: f}

		now := clock.Now()
		captured := withRunTimes(t, failedRunDelivery(t, "original", run, sha), now.Add(-2*time.Minute), now.Add(-2*time.Minute), now)
		captured.ReceivedAt = now
		c, err := h.Handle(ctx, captured)
		if err != nil || c == nil {
			t.Fatalf("the failure decided nothing (%v)", err)
		}
		inTx(t, f, func(tx *sql.Tx) {
			if err := c(ctx, tx); err != nil {
				t.Fatal(err)
			}
		})
		if ep := checkoutEpisode(t, f, run); ep.State != StateAlerted {
			t.Fatalf("setup: episode %s (%s), want alerted", ep.State, ep.Decision.Reason)
		}
		// Its check run and alert issue jobs ran; then the episode's time
		// went by.
		if _, err := f.deps.DB.Write.Exec(`UPDATE river_job SET state = 'completed', finalized_at = CURRENT_TIMESTAMP`); err != nil {
			t.Fatal(err)
		}
		if err := clock.Sleep(ctx, rerunHorizon+time.Hour); err != nil {
			t.Fatal(err)
		}
		sweepRetention(t, f)
		if _, ok, _ := getEpisode(ctx, f.deps.DB.Read, "acme/checkout", run); ok {
			t.Fatal("setup: the episode past retention was kept")
		}
		jobs := countJobs(t, f, AlertArgs{}.Kind())

		replay := captured
		replay.ID, replay.ReceivedAt = "replayed", clock.Now()
		c, err = h.Handle(ctx, replay)
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			inTx(t, f, func(tx *sql.Tx) {
				if err := c(ctx, tx); err != nil {
					t.Fatal(err)
				}
			})
			ep := checkoutEpisode(t, f, run)
			t.Fatalf("the replayed failure was decided again: episode %s (%s), %d alert jobs, was %d",
				ep.State, ep.Decision.Reason, countJobs(t, f, AlertArgs{}.Kind()), jobs)
		}
		if !strings.Contains(log.String(), "replay") || !strings.Contains(log.String(), "delivery=replayed") {
			t.Errorf("the log does not say why delivery replayed was ignored:\n%s", log.String())
		}

		// A run created 40 days ago, re-run by a person on its day 29,
		// whose attempt waited on a reviewer and failed now: GitHub sends
		// it now, and no episode follows the run. It is decided.
		now = clock.Now()
		late := withRunTimes(t, failedRunDelivery(t, "late", lateRun, sha), now.Add(-40*24*time.Hour), now.Add(-11*24*time.Hour), now)
		late.ReceivedAt = now
		if c, err := h.Handle(ctx, late); err != nil || c == nil {
			t.Errorf("a failure GitHub sent now of a run created 40 days ago decided nothing (%v)", err)
		}
	})
}
