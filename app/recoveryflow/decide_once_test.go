package recoveryflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

const onceConfig = `version: 1
apps:
  checkout:
    environments:
      staging:
        cluster: staging-eu
        workflows: [deploy.yml]
        rollback: {mode: workflow, workflow: deploy.yml, input: version}
`

// failedRunDelivery is GitHub's workflow_run completed payload for a failed
// first attempt of acme/checkout's deploy run id, as delivery deliveryID.
func failedRunDelivery(t *testing.T, deliveryID string, id int64, sha string) pipeline.Delivery {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(githubtest.LoadPayload(t, "workflow_run", "completed.payload.json"), &m); err != nil {
		t.Fatal(err)
	}
	m["action"] = "completed"
	m["installation"] = map[string]any{"id": githubtest.InstallationID}
	m["repository"].(map[string]any)["full_name"] = "acme/checkout"
	wr := m["workflow_run"].(map[string]any)
	wr["id"], wr["run_attempt"], wr["status"], wr["conclusion"] = id, 1, "completed", "failure"
	wr["path"], wr["head_sha"] = ".github/workflows/deploy.yml", sha
	wr["created_at"] = time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Delivery{ID: deliveryID, Event: "workflow_run", Action: "completed", InstallationID: githubtest.InstallationID,
		Repository: "acme/checkout", Body: body}
}

// commitAtOnce commits each decision in its own transaction, all at the
// same time, as two drain rounds or two replicas do. Each must commit: a
// decision that lost the race ends quietly, it is not retried.
func commitAtOnce(t *testing.T, f *flow, commits []pipeline.Commit) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, len(commits))
	for i, c := range commits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return c(ctx, tx) })
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("commit %d: %v (a decision that lost the race must end quietly, not be retried)", i, err)
		}
	}
}

// Two deliveries of one failure (GitHub sending twice, under two delivery
// ids) decided side by side, as two drain rounds or two replicas do: both
// read no episode, both decide, both commit at the same time. Seed 000
// decides a failure once: one episode, retry_count 1, one set of audit
// events, one re-run queued.
func TestTwoDeliveriesOfOneFailureAtOnceAreDecidedOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		ctx := context.Background()
		fake := githubtest.NewServer(t)
		sha := fake.PutFile("acme/checkout", "main", ".github/ripcord.yml", onceConfig)
		const run = 71
		fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: run, HeadSHA: sha})
		f := workerFlow(t, dbURL, fake, ghclient.NewStepClock(time.Now().UTC()), nil)
		h := &workflowRunHandler{f: f}

		var commits []pipeline.Commit
		for _, id := range []string{"delivery-a", "delivery-b"} {
			c, err := h.Handle(ctx, failedRunDelivery(t, id, run, sha))
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if c == nil {
				t.Fatalf("%s decided nothing: both must decide before either commits", id)
			}
			commits = append(commits, c)
		}
		commitAtOnce(t, f, commits)

		ep := checkoutEpisode(t, f, run)
		if ep.State != StateRetryScheduled || ep.RetryCount != 1 || ep.Seq != 1 {
			t.Errorf("episode %s, retry_count %d, seq %d; want retry_scheduled, 1, 1", ep.State, ep.RetryCount, ep.Seq)
		}
		events, err := f.deps.Records.Audit(ctx, records.AuditFilter{ReleaseID: RunKey("acme/checkout", run), Oldest: true})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range events {
			types = append(types, string(e.Type))
		}
		if !slices.Equal(types, []string{"failure_detected", "retry_initiated"}) {
			t.Errorf("audit events %v: the failure was decided more than once", types)
		}
		if n := countJobs(t, f, RerunArgs{}.Kind()); n != 1 {
			t.Errorf("re-run jobs = %d, want 1", n)
		}
	})
}

// taskFact applies the fact the bundled action posts in run of
// acme/checkout's deploy to staging.
func applyTaskFact(t *testing.T, f *flow, run int64, status records.TaskStatus, release, version string) {
	t.Helper()
	fact := records.Fact{Source: records.SourceTask, Repository: "acme/checkout", WorkflowRunID: run, RunAttempt: 1, Status: status,
		App: "checkout", Environment: "staging", Cluster: "staging-eu", ReleaseID: release, Version: version, ObservedAt: time.Now().UTC()}
	if status == records.TaskFailed {
		fact.FailureType = "health_check_failure"
	}
	if err := f.deps.DB.InTx(context.Background(), func(tx *sql.Tx) error {
		_, err := f.deps.Records.ApplyFact(context.Background(), tx, fact, "", time.Now().UTC())
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// Two runs that deployed one release fail, with the retries spent, and
// their decisions commit side by side (two replicas): the release is
// rolled back once, and the other run's failure is rollback_skipped.
func TestTwoRunsOfOneReleaseDecidedAtOnceRollBackOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		ctx := context.Background()
		fake := githubtest.NewServer(t)
		sha := fake.PutFile("acme/checkout", "main", ".github/ripcord.yml", onceConfig+"recovery: {max_retries: 0}\n")
		f := workerFlow(t, dbURL, fake, ghclient.NewStepClock(time.Now().UTC()), nil)
		applyTaskFact(t, f, 4001, records.TaskSuccess, "checkout-v1", "v1")
		runs := []int64{81, 82}
		for _, run := range runs {
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: run, HeadSHA: sha})
			applyTaskFact(t, f, run, records.TaskFailed, "checkout-v2", "v2")
		}
		h := &workflowRunHandler{f: f}
		var commits []pipeline.Commit
		for _, run := range runs {
			c, err := h.Handle(ctx, failedRunDelivery(t, fmt.Sprintf("delivery-%d", run), run, sha))
			if err != nil || c == nil {
				t.Fatalf("run %d: decided nothing (%v)", run, err)
			}
			commits = append(commits, c)
		}
		commitAtOnce(t, f, commits)
		var states []string
		for _, run := range runs {
			ep := checkoutEpisode(t, f, run)
			states = append(states, string(ep.State))
			if ep.State == StateSkipped && ep.Decision.Rule != RuleSkipRollbackUnderWay {
				t.Errorf("run %d skipped by rule %s", run, ep.Decision.Rule)
			}
		}
		slices.Sort(states)
		if !slices.Equal(states, []string{string(StateRollingBack), string(StateSkipped)}) {
			t.Errorf("states %v, want one rolling_back and one skipped", states)
		}
		if n := countJobs(t, f, DispatchArgs{}.Kind()); n != 1 {
			t.Errorf("rollback dispatch jobs = %d, want 1", n)
		}
	})
}
