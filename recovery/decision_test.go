package recovery

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 10, 10, 3, 0, 0, 0, time.UTC)

var previous = Target{
	ReleaseID: "checkout:prod-eu/prod#41", Version: "v1", Eligible: true,
	Evidence: "release checkout:prod-eu/prod#41 was healthy in prod-eu at 2026-10-09T10:00:00Z",
}

// failing is a health-check failure of v2 while v2 runs, an eligible v1
// known, a fresh completed run: the decision then rests on retry_count.
func failing(change func(*Input)) Input {
	prev := previous
	in := Input{
		Now:            now,
		FailureType:    "health_check_failure",
		RetryCount:     1,
		Policy:         DefaultPolicy(),
		Run:            Run{ID: 123, Completed: true, Attempt: 1, CreatedAt: now.Add(-10 * time.Minute)},
		FailedVersion:  "v2",
		Previous:       &prev,
		Live:           Live{Known: true, Version: "v2"},
		RollbackMode:   "kubernetes",
		AvailableModes: []string{"kubernetes", "workflow"},
	}
	if change != nil {
		change(&in)
	}
	return in
}

var (
	retried     = []string{EventFailureDetected, EventRetryInitiated}
	rolledBack  = []string{EventFailureDetected, EventRollbackInitiated}
	skipped     = []string{EventFailureDetected, EventRollbackSkipped}
	humanNeeded = []string{EventFailureDetected, EventManualInterventionRequired}
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name       string
		in         Input
		action     Action
		rule       string
		events     []string
		backoff    time.Duration
		reasonHas  []string
		wantTarget bool
	}{
		// Rule 1: retry.
		{name: "first failure is retried after the initial backoff",
			in: failing(nil), action: ActionRetry, rule: RuleRetry, events: retried, backoff: 10 * time.Second,
			reasonHas: []string{"run 123", "10s", "retry 1 of 3"}},
		{name: "second failure waits twice as long",
			in: failing(func(in *Input) { in.RetryCount = 2 }), action: ActionRetry, rule: RuleRetry, events: retried, backoff: 20 * time.Second},
		{name: "retry_count equal to max_retries is still retried",
			in: failing(func(in *Input) { in.RetryCount = 3 }), action: ActionRetry, rule: RuleRetry, events: retried, backoff: 40 * time.Second},
		{name: "retry_count one past max_retries is not retried",
			in: failing(func(in *Input) { in.RetryCount = 4 }), action: ActionRollback, rule: RuleRollback, events: rolledBack,
			reasonHas: []string{"failure 4", "max_retries is 3"}, wantTarget: true},
		{name: "max_retries 0 never retries",
			in: failing(func(in *Input) { in.Policy.MaxRetries = 0 }), action: ActionRollback, rule: RuleRollback, events: rolledBack, wantTarget: true},
		{name: "a caller that forgot to increment retry_count still gets the first backoff",
			in: failing(func(in *Input) { in.RetryCount = 0 }), action: ActionRetry, rule: RuleRetry, events: retried, backoff: 10 * time.Second},
		{name: "build failure is retried while retries are left: builds flake too",
			in: failing(func(in *Input) { in.FailureType = "build_failure" }), action: ActionRetry, rule: RuleRetry, events: retried, backoff: 10 * time.Second},

		// GitHub's limits move the decision on.
		{name: "unknown run with retries left alerts: seed 000 never rolls back before the retries are spent",
			in: failing(func(in *Input) { in.Run = Run{} }), action: ActionAlert, rule: RuleRunUnknown, events: humanNeeded,
			reasonHas: []string{"run is not known", "retry 1 of 3"}},
		{name: "unknown run after the retries is decided by the rollback rules",
			in: failing(func(in *Input) { in.Run = Run{}; in.RetryCount = 4 }), action: ActionRollback, rule: RuleRollback, events: rolledBack,
			wantTarget: true},
		{name: "run without a creation time cannot be checked against 30 days",
			in: failing(func(in *Input) { in.Run.CreatedAt = time.Time{}; in.Previous = nil }), action: ActionAlert, rule: RuleRunUnknown, events: humanNeeded,
			reasonHas: []string{"no creation time"}},
		{name: "run still in progress is not re-run",
			in: failing(func(in *Input) { in.Run.Completed = false; in.Previous = nil }), action: ActionAlert, rule: RuleRunNotCompleted, events: humanNeeded,
			reasonHas: []string{"has not completed"}},
		{name: "49 re-runs so far: GitHub allows one more",
			in: failing(func(in *Input) { in.Run.Attempt = 50 }), action: ActionRetry, rule: RuleRetry, events: retried, backoff: 10 * time.Second},
		{name: "50 re-runs so far: rolled back instead of a re-run GitHub refuses",
			in: failing(func(in *Input) { in.Run.Attempt = 51 }), action: ActionRollback, rule: RuleRollback, events: rolledBack,
			reasonHas: []string{"re-run 50 times"}, wantTarget: true},
		{name: "50 re-runs and nothing to roll back to names the limit",
			in: failing(func(in *Input) { in.Run.Attempt = 51; in.Previous = nil }), action: ActionAlert, rule: RuleRerunLimit, events: humanNeeded,
			reasonHas: []string{"re-run 50 times", "No earlier release"}},
		{name: "run created 29 days ago is retried",
			in: failing(func(in *Input) { in.Run.CreatedAt = now.Add(-29 * 24 * time.Hour) }), action: ActionRetry, rule: RuleRetry, events: retried, backoff: 10 * time.Second},
		{name: "run created 31 days ago is not re-run",
			in: failing(func(in *Input) { in.Run.CreatedAt = now.Add(-31 * 24 * time.Hour); in.Previous = nil }), action: ActionAlert, rule: RuleRunTooOld, events: humanNeeded,
			reasonHas: []string{"30 days"}},
		{name: "backoff that carries the re-run past 30 days is not scheduled",
			in: failing(func(in *Input) { in.Run.CreatedAt = now.Add(-MaxRunAge + 5*time.Second); in.Previous = nil }), action: ActionAlert, rule: RuleRunTooOld, events: humanNeeded},
		{name: "a scheduled retry falling due checks the 30 days at its time, not one backoff later",
			in: failing(func(in *Input) { in.Run.CreatedAt = now.Add(-MaxRunAge + 5*time.Second); in.Due = true }), action: ActionRetry, rule: RuleRetry, events: retried,
			backoff: 0},
		{name: "a scheduled retry falling due after the 30 days is not re-run",
			in: failing(func(in *Input) { in.Run.CreatedAt = now.Add(-MaxRunAge); in.Due = true; in.Previous = nil }), action: ActionAlert, rule: RuleRunTooOld, events: humanNeeded},
		{name: "limit hit on a previous release that is not eligible names the limit",
			in: failing(func(in *Input) { in.Run.Completed = false; in.Previous.Eligible = false }), action: ActionAlert, rule: RuleRunNotCompleted, events: humanNeeded},

		// Rule 2: nothing was deployed.
		{name: "build failure with retries exhausted is never rolled back",
			in: failing(func(in *Input) { in.FailureType = "build_failure"; in.RetryCount = 4 }), action: ActionAlert, rule: RuleBuildFailure, events: humanNeeded,
			reasonHas: []string{"nothing was deployed"}},
		{name: "test failure is never rolled back even though its version looks live",
			in: failing(func(in *Input) { in.FailureType = "test_failure"; in.RetryCount = 4 }), action: ActionAlert, rule: RuleTestFailure, events: humanNeeded},
		{name: "build failure past a GitHub limit alerts instead of rolling back",
			in: failing(func(in *Input) { in.FailureType = "build_failure"; in.Run.Attempt = 51 }), action: ActionAlert, rule: RuleBuildFailure, events: humanNeeded,
			reasonHas: []string{"re-run 50 times", "build_failure"}},

		// Seed 000, Known Behaviours: "build-and-test.yml reports
		// build_failure/test_failure with namespace: ci and no
		// workflow_run_id. These produce an alert because no Deployment
		// exists to retry or roll back."
		{name: "seed 000: a build_failure with no workflow_run_id produces an alert",
			in: failing(func(in *Input) { in.FailureType = "build_failure"; in.Run = Run{} }), action: ActionAlert, rule: RuleRunUnknown, events: humanNeeded,
			reasonHas: []string{"run is not known"}},
		{name: "seed 000: a test_failure with no workflow_run_id produces an alert, also once retries are spent",
			in: failing(func(in *Input) { in.FailureType = "test_failure"; in.Run = Run{}; in.RetryCount = 4 }), action: ActionAlert, rule: RuleTestFailure, events: humanNeeded},

		// Rule 3: roll back only what is running, to a safe target.
		{name: "rollback names the target and its evidence",
			in: failing(func(in *Input) { in.RetryCount = 4 }), action: ActionRollback, rule: RuleRollback, events: rolledBack, wantTarget: true,
			reasonHas: []string{"from v2 to v1", "checkout:prod-eu/prod#41", "was healthy in prod-eu", "with mode kubernetes"}},
		{name: "unknown failure type is handled like a failed deploy",
			in: failing(func(in *Input) { in.RetryCount = 4; in.FailureType = "unknown" }), action: ActionRollback, rule: RuleRollback, events: rolledBack, wantTarget: true},
		{name: "another version running is skipped, not rolled back over",
			in: failing(func(in *Input) { in.RetryCount = 4; in.Live.Version = "v3" }), action: ActionSkip, rule: RuleSkipOtherVersionLive, events: skipped,
			reasonHas: []string{"v3 is running, not the failed v2"}},
		{name: "another version running is skipped even without a rollback mode",
			in: failing(func(in *Input) { in.RetryCount = 4; in.Live.Version = "v1"; in.RollbackMode = "" }), action: ActionSkip, rule: RuleSkipOtherVersionLive, events: skipped},
		{name: "unreadable live version alerts instead of rolling back blind",
			in: failing(func(in *Input) {
				in.RetryCount = 4
				in.Live = Live{Error: `deployments.apps "checkout" is forbidden`}
			}), action: ActionAlert, rule: RuleLiveVersionUnknown, events: humanNeeded,
			reasonHas: []string{`deployments.apps "checkout" is forbidden`}},
		{name: "live version read as empty is as good as unreadable",
			in: failing(func(in *Input) { in.RetryCount = 4; in.Live = Live{Known: true} }), action: ActionAlert, rule: RuleLiveVersionUnknown, events: humanNeeded},
		{name: "image pinned by digest only cannot be compared with a tag",
			in: failing(func(in *Input) { in.RetryCount = 4; in.Live = Live{Known: true, Digest: "sha256:abc"} }), action: ActionAlert, rule: RuleDigestPinned, events: humanNeeded,
			reasonHas: []string{"sha256:abc", "v2"}},
		{name: "failed version not reported cannot be compared",
			in: failing(func(in *Input) { in.RetryCount = 4; in.FailedVersion = "" }), action: ActionAlert, rule: RuleFailedVersionUnknown, events: humanNeeded},
		{name: "previous release that is not eligible is not a rollback target",
			in: failing(func(in *Input) {
				in.RetryCount = 4
				in.Previous.Eligible = false
				in.Previous.Evidence = "no record of v1 reached healthy in prod-eu among the newest 5"
			}), action: ActionAlert, rule: RulePreviousNotEligible, events: humanNeeded,
			reasonHas: []string{"not a safe rollback target", "among the newest 5."}},
		{name: "environment without a rollback mode alerts",
			in: failing(func(in *Input) { in.RetryCount = 4; in.RollbackMode = "" }), action: ActionAlert, rule: RuleNoRollbackMode, events: humanNeeded,
			reasonHas: []string{"rollback.mode"}},
		{name: "rollback mode not implemented yet alerts and names the mode",
			in: failing(func(in *Input) { in.RetryCount = 4; in.RollbackMode = "pull-request" }), action: ActionAlert, rule: RuleModeUnavailable, events: humanNeeded,
			reasonHas: []string{"rollback mode pull-request is not available yet", "v1"}},

		// Rule 4.
		{name: "no previous version known alerts for a human",
			in: failing(func(in *Input) { in.RetryCount = 4; in.Previous = nil }), action: ActionAlert, rule: RuleNoPreviousVersion, events: humanNeeded,
			reasonHas: []string{"max_retries is 3", "No earlier release"}},
		{name: "no previous version is reported before an unreadable live version, in seed order",
			in: failing(func(in *Input) { in.RetryCount = 4; in.Previous = nil; in.Live = Live{} }), action: ActionAlert, rule: RuleNoPreviousVersion, events: humanNeeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.in)
			if d.Action != tt.action || d.Rule != tt.rule {
				t.Fatalf("Decide = %s/%s, want %s/%s\nreason: %s", d.Action, d.Rule, tt.action, tt.rule, d.Reason)
			}
			if !reflect.DeepEqual(d.AuditEvents, tt.events) {
				t.Errorf("audit events = %v, want %v", d.AuditEvents, tt.events)
			}
			if d.Backoff != tt.backoff {
				t.Errorf("backoff = %s, want %s", d.Backoff, tt.backoff)
			}
			wantAt := time.Time{}
			if tt.action == ActionRetry {
				wantAt = now.Add(tt.backoff)
			}
			if !d.RetryAt.Equal(wantAt) {
				t.Errorf("RetryAt = %s, want %s", d.RetryAt, wantAt)
			}
			if (d.Target != nil) != tt.wantTarget || (tt.wantTarget && *d.Target != *tt.in.Previous) {
				t.Errorf("target = %+v, want one: %v", d.Target, tt.wantTarget)
			}
			for _, s := range tt.reasonHas {
				if !strings.Contains(d.Reason, s) {
					t.Errorf("reason %q does not say %q", d.Reason, s)
				}
			}
		})
	}
}

func TestDecideCountsAttempts(t *testing.T) {
	d := Decide(failing(func(in *Input) { in.RetryCount = 2 }))
	if d.Attempt != 2 || d.MaxAttempts != 3 {
		t.Errorf("attempt %d of %d, want 2 of 3", d.Attempt, d.MaxAttempts)
	}
	d = Decide(failing(func(in *Input) { in.RetryCount = 5; in.Policy.MaxRetries = 4 }))
	if d.Attempt != 5 || d.MaxAttempts != 4 {
		t.Errorf("attempt %d of %d, want 5 of 4", d.Attempt, d.MaxAttempts)
	}
}

// Decide is pure: the same input gives the same decision, and the input is
// not changed (the caller stores it next to the decision).
func TestDecideIsPure(t *testing.T) {
	in := failing(func(in *Input) { in.RetryCount = 4 })
	before := *in.Previous
	a, b := Decide(in), Decide(in)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two decisions differ:\n%+v\n%+v", a, b)
	}
	if *in.Previous != before {
		t.Errorf("Decide changed its input: %+v", *in.Previous)
	}
}
