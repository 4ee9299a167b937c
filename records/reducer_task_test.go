package records

import (
	"slices"
	"strings"
	"testing"
)

func TestTaskInProgressOpensRecord(t *testing.T) {
	t.Parallel()
	f := taskFact("deploy-3f2a", TaskInProgress, 1, func(f *Fact) { f.Images = []string{imageOf("R7")} })
	res := Reduce(Input{Fact: f, Now: at(2)})
	if res.Outcome != OutcomeOpened || !res.KeepFact || res.Observation != nil {
		t.Fatalf("outcome = %s keep = %v observation = %v, want opened, kept, no observation", res.Outcome, res.KeepFact, res.Observation)
	}
	got := recordOf(t, res, "deploy-3f2a")
	want := Record{
		ReleaseID: "deploy-3f2a", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Repository: "acme/checkout", Kind: KindPromote, Image: imageOf("R7"), Digest: digestOf("R7"),
		GitRevision: "1a2b3c4d", State: StateProgressing, LastFactAt: ptime(at(1)),
		CreatedAt: at(2), UpdatedAt: at(2),
	}
	if got.ReleaseID != want.ReleaseID || got.App != want.App || got.Environment != want.Environment ||
		got.Cluster != want.Cluster || got.Repository != want.Repository || got.Kind != want.Kind ||
		got.Image != want.Image || got.Digest != want.Digest || got.GitRevision != want.GitRevision ||
		got.State != want.State || !got.LastFactAt.Equal(*want.LastFactAt) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("record = %+v\nwant %+v", got, want)
	}
	if want := []AuditType{AuditReleaseOpened, AuditFactReceived, AuditDeploymentReceived, AuditStateChanged}; !slices.Equal(auditTypes(res), want) {
		t.Errorf("audit = %v, want %v", auditTypes(res), want)
	}
}

func TestTaskOpensWithVersionWhenNoImage(t *testing.T) {
	t.Parallel()
	res := Reduce(Input{Fact: taskFact("", TaskInProgress, 1, func(f *Fact) { f.DeploymentID = "deploy-3f2a" }), Now: at(1)})
	got := recordOf(t, res, "deploy-3f2a")
	if got.Image != "v1a2b3c4-1760000000" || got.Digest != "" {
		t.Errorf("image = %q digest = %q, want the version and no digest", got.Image, got.Digest)
	}
}

func TestTaskStatusMapsToState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		from   State
		status TaskStatus
		want   State
	}{
		{"success -> healthy", StateProgressing, TaskSuccess, StateHealthy},
		{"failed -> failed", StateProgressing, TaskFailed, StateFailed},
		{"re-run in_progress after a failure -> progressing", StateFailed, TaskInProgress, StateProgressing},
		{"in_progress clears an abort", StateAborted, TaskInProgress, StateProgressing},
		{"cancelled -> aborted", StateProgressing, TaskCancelled, StateAborted},
		{"a re-run's success after a cancel -> healthy", StateAborted, TaskSuccess, StateHealthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := record("R1", tc.from, 0, lastFact(1))
			res := Reduce(Input{Fact: taskFact("R1", tc.status, 5, attempt(2)), Record: &r, Now: at(5)})
			if got := recordOf(t, res, "R1"); got.State != tc.want {
				t.Errorf("state = %s, want %s", got.State, tc.want)
			}
		})
	}
}

func TestTaskSuccessWithoutInProgressOpensHealthy(t *testing.T) {
	t.Parallel()
	older := record("R0", StateHealthy, -30, healthyAt(-25))
	res := Reduce(Input{Fact: taskFact("R1", TaskSuccess, 3), Siblings: []Record{older}, Now: at(3)})
	if res.Outcome != OutcomeOpened {
		t.Fatalf("outcome = %s, want opened", res.Outcome)
	}
	if got := recordOf(t, res, "R1"); got.State != StateHealthy || got.HealthyAt == nil {
		t.Errorf("R1 = %s healthy_at %v, want healthy", got.State, got.HealthyAt)
	}
	if got := recordOf(t, res, "R0"); got.State != StateSuperseded {
		t.Errorf("R0 = %s, want superseded", got.State)
	}
	if !slices.Equal(effectTypes(res), []string{CDEventServiceUpgraded}) {
		t.Errorf("effects = %v, want service.upgraded", effectTypes(res))
	}
}

func TestTaskFailureRecordsFailureType(t *testing.T) {
	t.Parallel()
	r := record("R1", StateProgressing, 0, lastFact(1))
	res := Reduce(Input{Fact: taskFact("R1", TaskFailed, 5, func(f *Fact) { f.FailureType = "health_check_failure" }), Record: &r, Now: at(5)})
	for _, e := range res.Audit {
		if e.Type == AuditFailureDetected {
			if e.Data["failure_type"] != "health_check_failure" {
				t.Errorf("failure_detected data = %v, want failure_type", e.Data)
			}
			return
		}
	}
	t.Errorf("audit = %v, want failure_detected", auditTypes(res))
}

func TestTaskForClosedReleaseIsDrift(t *testing.T) {
	t.Parallel()
	r := record("R1", StateSuperseded, 0, healthyAt(5), func(r *Record) { r.UpdatedAt = at(20) })
	res := Reduce(Input{Fact: taskFact("R1", TaskInProgress, 30, attempt(3)), Record: &r, Now: at(30)})
	if res.Outcome != OutcomeDrift || !strings.Contains(res.Reason, "superseded") {
		t.Errorf("outcome = %s (%s), want drift: an old release is being deployed again outside a rollback", res.Outcome, res.Reason)
	}
	if res.Observation != nil {
		t.Error("task facts have no workload observation")
	}
}

func TestTaskFactOfAnotherRepositoryOrTargetIsIgnored(t *testing.T) {
	t.Parallel()
	// A workflow's OIDC token vouches for its own repository only: it must
	// not move a release that another repository (or another app or
	// environment) registered, only because it names its release id.
	for _, tc := range []struct {
		name  string
		fact  func(*Fact)
		field string
	}{
		{"another repository", func(f *Fact) { f.Repository = "acme/payments" }, "repository"},
		{"another app", func(f *Fact) { f.App = "payments" }, "app"},
		{"another environment", func(f *Fact) { f.Environment = "staging" }, "environment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := record("R1", StateProgressing, 0, lastFact(1))
			res := Reduce(Input{Fact: taskFact("R1", TaskSuccess, 5, tc.fact), Record: &r, Now: at(5)})
			if res.Outcome != OutcomeIgnored || !strings.Contains(res.Reason, tc.field) {
				t.Fatalf("outcome = %s (%s), want ignored naming %s", res.Outcome, res.Reason, tc.field)
			}
			if len(res.Records) != 0 || len(res.Effects) != 0 || res.KeepFact {
				t.Errorf("an ignored fact changed records %v, effects %v or was kept", releaseIDs(res.Records), effectTypes(res))
			}
		})
	}
}

// A cancelled deploy job is no failed one: the release is called off
// (aborted), the audit trail says which run and attempt stopped it and who
// started that run, and nothing says it failed. The fact is a fact: the
// release ran (a cancel usually lands while the workload rolls out), so it
// is not withdrawn, and it no longer waits for a first fact.
func TestTaskCancelledAbortsAndSaysWhichRun(t *testing.T) {
	t.Parallel()
	r := record("R1", StateProgressing, 0, lastFact(1))
	f := taskFact("R1", TaskCancelled, 5, attempt(2), func(f *Fact) {
		f.Metadata["actor"], f.Metadata["job"] = "octocat", "deploy"
	})
	res := Reduce(Input{Fact: f, Record: &r, Now: at(6)})
	if res.Outcome != OutcomeApplied || !res.KeepFact {
		t.Fatalf("outcome = %s (%s) keep = %v, want applied and kept", res.Outcome, res.Reason, res.KeepFact)
	}
	got := recordOf(t, res, "R1")
	if got.State != StateAborted || got.LastFactAt == nil || !got.LastFactAt.Equal(at(5)) || !got.Ran() || got.Withdrawn() {
		t.Errorf("R1 = %s last_fact_at %v ran %v withdrawn %v, want aborted at minute 5, ran, not withdrawn",
			got.State, got.LastFactAt, got.Ran(), got.Withdrawn())
	}
	if want := []AuditType{AuditFactReceived, AuditDeploymentReceived, AuditStateChanged}; !slices.Equal(auditTypes(res), want) {
		t.Fatalf("audit = %v, want %v (no failure_detected: a cancel is no failure)", auditTypes(res), want)
	}
	ev := res.Audit[2]
	for _, s := range []string{"progressing -> aborted", "cancelled", "run 123456789 attempt 2 of acme/checkout", "actor octocat", "job deploy"} {
		if !strings.Contains(ev.Message, s) {
			t.Errorf("state_changed message %q does not say %q", ev.Message, s)
		}
	}
	for k, v := range map[string]any{"workflow_run_id": int64(123456789), "run_attempt": 2, "actor": "octocat", "cancelled": true, "to": "aborted"} {
		if ev.Data[k] != v {
			t.Errorf("state_changed data[%s] = %v, want %v (data %v)", k, ev.Data[k], v, ev.Data)
		}
	}
	if len(res.Effects) != 0 {
		t.Errorf("effects = %v, want none", effectTypes(res))
	}
}

func TestTaskCancelledIsAValidStatusWithoutFailureType(t *testing.T) {
	t.Parallel()
	f := taskFact("R1", TaskCancelled, 1)
	if err := f.ValidateSent(nil); err != nil {
		t.Errorf("cancelled fact: %v, want valid", err)
	}
	f.FailureType = "deploy_failure"
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "failure_type") {
		t.Errorf("cancelled fact with a failure_type: %v, want failure_type refused", err)
	}
	f = taskFact("R1", "canceled", 1)
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "in_progress, success, failed or cancelled") {
		t.Errorf("status canceled: %v, want the four statuses named", err)
	}
}
