package rolloutflow

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// healthyJobs are the rollout_healthy jobs queued, by their arguments.
func (h *harness) healthyJobs() []HealthyArgs {
	h.t.Helper()
	args := "json(args)" // River's SQLite driver keeps args as JSONB
	if h.x.deps.DB.Dialect == store.Postgres {
		args = "args::text"
	}
	rows, err := h.x.deps.DB.Read.Query(`SELECT `+args+` FROM river_job WHERE kind = $1 ORDER BY id`, HealthyArgs{}.Kind())
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var out []HealthyArgs
	for rows.Next() {
		var raw string
		var a HealthyArgs
		if err := rows.Scan(&raw); err != nil {
			h.t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// The end of a rollout that succeeded queues one healthy report, and its
// fact is the one the deploy workflow's own success for the last deploy
// batch's run would be: same id, so either one after the other is a repeat.
func TestASucceededRolloutQueuesItsReleasesHealthyFact(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		h.start(nil)
		if r := h.run(nil); r.Machine.Status != Succeeded {
			t.Fatalf("status %s (%s), want succeeded", r.Machine.Status, r.Machine.Failure)
		}
		h.tick() // an extra tick of the ended rollout queues nothing more
		jobs := h.healthyJobs()
		if len(jobs) != 1 || jobs[0].RolloutID != h.id || jobs[0].EndedAt.IsZero() {
			t.Fatalf("healthy reports queued: %+v, want one of rollout %s with its end", jobs, h.id)
		}
		var applied [][]records.Fact
		h.x.deps.ApplyFacts = func(fs []records.Fact) error { applied = append(applied, fs); return nil }
		if err := h.x.reportHealthy(context.Background(), jobs[0]); err != nil {
			t.Fatal(err)
		}
		if len(applied) != 1 || len(applied[0]) != 1 {
			t.Fatalf("facts applied: %+v, want one", applied)
		}
		f := applied[0][0]
		last := h.gh.Dispatches(testRepo)[len(h.gh.Dispatches(testRepo))-1]
		if f.Source != records.SourceTask || f.Repository != testRepo || f.App != "checkout" || f.Environment != "prod" ||
			f.Cluster != "prod-eu" || f.ReleaseID != "r2:prod-eu/prod" || f.Version != "v2" || f.Status != records.TaskSuccess ||
			f.WorkflowRunID != last.RunID || f.RunAttempt != 1 || f.Metadata["rollout"] != h.id || !f.ObservedAt.Equal(jobs[0].EndedAt) {
			t.Errorf("fact %+v; want task success of r2 (v2) in checkout/prod/prod-eu by run %d attempt 1, rollout %s", f, last.RunID, h.id)
		}
		if err := f.Validate(); err != nil {
			t.Errorf("the fact does not validate: %v", err)
		}
		workflow := records.Fact{Source: records.SourceTask, Repository: testRepo, WorkflowRunID: last.RunID, RunAttempt: 1,
			Status: records.TaskSuccess, ReleaseID: "r2:prod-eu/prod", App: "checkout", Environment: "prod"}
		if f.ID() != workflow.ID() {
			t.Errorf("fact id %s, want the workflow's own success's %s", f.ID(), workflow.ID())
		}
	})
}

// A rollout that fails reports nothing about its release (README: what
// that means for the release is not decided).
func TestAFailedRolloutReportsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.failAt["deploy@eu-1/eu-1/eu-1a#0"] = true
	h.start(nil)
	if r := h.run(nil); r.Machine.Status != Failed {
		t.Fatalf("status %s, want failed", r.Machine.Status)
	}
	if jobs := h.healthyJobs(); len(jobs) != 0 {
		t.Errorf("a failed rollout queued healthy reports %+v", jobs)
	}
	h.x.deps.ApplyFacts = func(fs []records.Fact) error { t.Errorf("facts applied for a failed rollout: %+v", fs); return nil }
	if err := h.x.reportHealthy(context.Background(), HealthyArgs{RolloutID: h.id, EndedAt: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}
}
