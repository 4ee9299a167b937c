package records

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestFactIDIsAStableHexHash(t *testing.T) {
	t.Parallel()
	f := fact("R1", PhaseProgressing, 1, step(1))
	id := f.ID()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("ID() = %q, want 32 hex characters", id)
	}
	// Pinned (computed outside Go from the documented scheme: sha256 of
	// length-prefixed cluster, uid, generation, phase, step, abort): a
	// change renumbers every stored fact, and every resync after an
	// upgrade would look new.
	if want := "1ad55283439a5f3fa46772e5257ce59a"; id != want {
		t.Errorf("ID() = %s, want %s (the id scheme changed)", id, want)
	}
}

func TestFactIDSameForTheSameObservation(t *testing.T) {
	t.Parallel()
	base := fact("R1", PhasePaused, 1, step(2))
	for name, f := range map[string]Fact{
		"resync minutes later":           fact("R1", PhasePaused, 16, step(2)),
		"id field sent by the source":    func() Fact { f := base; f.FactID = "whatever"; return f }(),
		"images listed in another order": func() Fact { f := base; f.Images = []string{"b", "a"}; return f }(),
		"step_count missing":             func() Fact { f := base; f.StepCount = 0; return f }(),
	} {
		if f.ID() != base.ID() {
			t.Errorf("%s: id %s != %s", name, f.ID(), base.ID())
		}
	}
}

func TestFactIDDiffersWhenTheObservationDiffers(t *testing.T) {
	t.Parallel()
	base := fact("R1", PhaseDegraded, 1, step(2))
	task := taskFact("R1", TaskInProgress, 1)
	for name, pair := range map[string][2]Fact{
		"next canary step":        {base, fact("R1", PhaseDegraded, 1, step(3))},
		"other phase":             {base, fact("R1", PhaseProgressing, 1, step(2))},
		"new generation (scale)":  {base, fact("R1", PhaseDegraded, 1, step(2), gen(3))},
		"abort at the same step":  {base, fact("R1", PhaseDegraded, 1, step(2), aborted())},
		"same uid, other cluster": {base, func() Fact { f := base; f.Cluster = "prod-us"; return f }()},
		"other rollout":           {base, func() Fact { f := base; f.UID = "other"; return f }()},
		"task re-run attempt":     {task, taskFact("R1", TaskInProgress, 1, attempt(2))},
		"task status":             {task, taskFact("R1", TaskSuccess, 1)},
		"task matrix environment": {task, taskFact("R1-staging", TaskInProgress, 1)},
		"task other repository":   {task, func() Fact { f := task; f.Repository = "acme/other"; return f }()},
		"cluster fact vs task":    {base, func() Fact { f := base; f.Source = SourceTask; return f }()},
	} {
		if pair[0].ID() == pair[1].ID() {
			t.Errorf("%s: both facts have id %s", name, pair[0].ID())
		}
	}
}

func TestFactIDOfTaskUsesDeploymentIDWhenNoReleaseID(t *testing.T) {
	t.Parallel()
	a := taskFact("", TaskSuccess, 1, func(f *Fact) { f.DeploymentID = "deploy-3f2a" })
	b := taskFact("", TaskSuccess, 1, func(f *Fact) { f.DeploymentID = "deploy-9c1d" })
	if a.ID() == b.ID() {
		t.Error("two deployments of one run share a fact id")
	}
	if a.ReleaseKey() != "deploy-3f2a" {
		t.Errorf("ReleaseKey() = %q, want the deployment id", a.ReleaseKey())
	}
}

func TestFactValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		f      Fact
		fields []string // the fields the error must name; none: valid
	}{
		{"valid rollout fact", fact("R1", PhaseProgressing, 1), nil},
		{"valid argocd sync failure without release id", func() Fact {
			f := fact("", PhaseSyncFailed, 1)
			f.Source, f.Revision = SourceArgoCD, "9f8e7d6"
			return f
		}(), nil},
		{"valid task fact", taskFact("R1", TaskFailed, 1, func(f *Fact) { f.FailureType = "health_check_failure" }), nil},
		{"valid task fact with deployment id only", taskFact("", TaskInProgress, 1, func(f *Fact) { f.DeploymentID = "deploy-3f2a" }), nil},
		{"no source", func() Fact { f := fact("R1", PhaseHealthy, 1); f.Source = ""; return f }(), []string{"source"}},
		{"unknown source", func() Fact { f := fact("R1", PhaseHealthy, 1); f.Source = "flux"; return f }(), []string{"source"}},
		{"no observed_at", func() Fact { f := fact("R1", PhaseHealthy, 1); f.ObservedAt = time.Time{}; return f }(), []string{"observed_at"}},
		{"phase in lower case", fact("R1", "healthy", 1), []string{"phase"}},
		{"no phase", fact("R1", "", 1), []string{"phase"}},
		{"rollout without release id annotation", fact("", PhaseHealthy, 1), []string{"release_id"}},
		{"argocd with neither release id nor revision", func() Fact { f := fact("", PhaseSyncFailed, 1); f.Source = SourceArgoCD; return f }(), []string{"release_id"}},
		{"workload not named", func() Fact {
			f := fact("R1", PhaseHealthy, 1)
			f.Cluster, f.Namespace, f.Name, f.UID = "", "", "", ""
			return f
		}(), []string{"cluster", "namespace", "name", "uid"}},
		{"generation zero", fact("R1", PhaseHealthy, 1, gen(0)), []string{"generation"}},
		{"step past step_count", fact("R1", PhaseProgressing, 1, step(5)), []string{"step"}},
		{"negative step", fact("R1", PhaseProgressing, 1, step(-1)), []string{"step"}},
		{"empty image", fact("R1", PhaseHealthy, 1, image(" ")), []string{"images[0]"}},
		{"task status in MANA's retry vocabulary", taskFact("R1", "retry_scheduled", 1), []string{"status"}},
		{"task without status", taskFact("R1", "", 1), []string{"status"}},
		{"task repository without owner", taskFact("R1", TaskSuccess, 1, func(f *Fact) { f.Repository = "checkout" }), []string{"repository"}},
		{"task without run id", taskFact("R1", TaskSuccess, 1, func(f *Fact) { f.WorkflowRunID = 0 }), []string{"workflow_run_id"}},
		{"task attempt zero", taskFact("R1", TaskSuccess, 1, attempt(0)), []string{"run_attempt"}},
		{"task without app and environment", taskFact("R1", TaskSuccess, 1, func(f *Fact) { f.App, f.Environment = "", "" }), []string{"app", "environment"}},
		{"task with neither release nor deployment id", taskFact("", TaskSuccess, 1), []string{"release_id"}},
		{"failure_type on a success", taskFact("R1", TaskSuccess, 1, func(f *Fact) { f.FailureType = "build_failure" }), []string{"failure_type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want valid", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors naming %v", tc.fields)
			}
			for _, field := range tc.fields {
				if !namesField(err, field) {
					t.Errorf("Validate() = %v, want a *FieldError for %q", err, field)
				}
			}
		})
	}
}

func namesField(err error, field string) bool {
	var joined interface{ Unwrap() []error }
	errs := []error{err}
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		var fe *FieldError
		if errors.As(e, &fe) && fe.Field == field && strings.HasPrefix(fe.Error(), field+": ") {
			return true
		}
	}
	return false
}

func TestWorkloadKeyAndObservationKeyAgree(t *testing.T) {
	t.Parallel()
	f := fact("R1", PhaseHealthy, 1)
	if got, want := observe(f).Key(), f.WorkloadKey(); got != want || want != "prod-eu/checkout/rollout/checkout" {
		t.Errorf("Observation.Key() = %q, WorkloadKey() = %q, want both prod-eu/checkout/rollout/checkout", got, want)
	}
	if k := taskFact("R1", TaskSuccess, 1).WorkloadKey(); k != "" {
		t.Errorf("task fact WorkloadKey() = %q, want empty", k)
	}
}
