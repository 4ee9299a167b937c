package recovery

import (
	"fmt"
	"strings"
	"time"

	"github.com/ripcord/ripcord/repoconfig"
)

// Decide applies the recovery rule (DESIGN.md "Recovery", seed 000), in order:
//
//  1. retry while retries are left and GitHub can re-run the run;
//  2. alert for build_failure and test_failure: nothing was deployed;
//  3. roll back to an eligible previous release if the failed version is the
//     one running; skip if another version runs; alert if that cannot be told;
//  4. alert otherwise.
//
// When retries are left but the run is not known, the decision is an alert
// (seed 000). When retries are left but GitHub cannot re-run the run (no
// creation time, still running, 50 re-runs, 30 days) the decision moves on
// to rules 2–4 and the reason says which limit stopped the retry.
func Decide(in Input) Decision {
	attempt := max(in.RetryCount, 1)
	base := Decision{Attempt: attempt, MaxAttempts: in.Policy.MaxRetries}

	if attempt <= in.Policy.MaxRetries {
		wait := in.Policy.Backoff(attempt)
		if in.Due {
			wait = 0
		}
		at := in.Now.Add(wait)
		rule, why := runLimit(in.Run, at)
		if rule == "" {
			d := base
			d.Action, d.Rule = ActionRetry, RuleRetry
			d.Backoff, d.RetryAt = wait, at
			d.Reason = fmt.Sprintf("Re-running the failed jobs of run %d in %s (retry %d of %d).",
				in.Run.ID, shortDuration(wait), attempt, in.Policy.MaxRetries)
			d.AuditEvents = []string{EventFailureDetected, EventRetryInitiated}
			return d
		}
		if in.Run.ID == 0 {
			// Seed 000: a retry needs the workflow_run_id, and without it the
			// result is alert; rolling back waits for the retries to be spent.
			d := base
			d.Action, d.Rule = ActionAlert, RuleRunUnknown
			d.Reason = fmt.Sprintf("Not retrying (retry %d of %d): %s. ripcord rolls back only once the retries are spent, so a human has to decide.",
				attempt, in.Policy.MaxRetries, why)
			d.AuditEvents = []string{EventFailureDetected, EventManualInterventionRequired}
			return d
		}
		return afterRetry(in, base, rule, "Not retrying: "+why+".")
	}
	exhausted := fmt.Sprintf("Not retrying: this is failure %d and max_retries is %d.", attempt, in.Policy.MaxRetries)
	return afterRetry(in, base, "", exhausted)
}

// runLimit returns the rule and reason of the first GitHub limit that stops
// a re-run at time at, or "" when GitHub will accept it. The age is checked
// at the re-run time, not now: a backoff can carry a run past 30 days.
func runLimit(r Run, at time.Time) (rule, why string) {
	switch {
	case r.ID == 0:
		return RuleRunUnknown, "the failed workflow run is not known, so there is nothing to re-run"
	case r.CreatedAt.IsZero():
		return RuleRunUnknown, fmt.Sprintf("run %d has no creation time, so GitHub's 30-day limit cannot be checked", r.ID)
	case !r.Completed:
		return RuleRunNotCompleted, fmt.Sprintf("run %d has not completed and GitHub re-runs completed runs only", r.ID)
	case max(r.Attempt, 1)-1 >= MaxReRuns:
		return RuleRerunLimit, fmt.Sprintf("run %d has been re-run %d times, GitHub's limit", r.ID, max(r.Attempt, 1)-1)
	case at.Sub(r.CreatedAt) >= MaxRunAge:
		return RuleRunTooOld, fmt.Sprintf("run %d was created %s and GitHub re-runs runs for 30 days only",
			r.ID, r.CreatedAt.UTC().Format(time.RFC3339))
	}
	return "", ""
}

// afterRetry applies rules 2–4 once no retry will happen. limitRule is the
// GitHub limit that stopped a retry ("" when retries are exhausted) and
// context says in a sentence why no retry happened.
func afterRetry(in Input, base Decision, limitRule, context string) Decision {
	v := rollbackVerdict(in, limitRule)
	d := base
	d.Action, d.Rule, d.Reason = v.action, v.rule, context+" "+v.reason
	switch v.action {
	case ActionRollback:
		d.Target = in.Previous
		d.AuditEvents = []string{EventFailureDetected, EventRollbackInitiated}
	case ActionSkip:
		d.AuditEvents = []string{EventFailureDetected, EventRollbackSkipped}
	default:
		d.AuditEvents = []string{EventFailureDetected, EventManualInterventionRequired}
	}
	return d
}

type verdict struct {
	action Action
	rule   string
	reason string
}

func alert(rule, format string, args ...any) verdict {
	return verdict{ActionAlert, rule, fmt.Sprintf(format, args...)}
}

// rollbackVerdict is rules 2–4: never roll back what was not deployed, roll
// back only what is known to be running to a target known to be safe.
func rollbackVerdict(in Input, limitRule string) verdict {
	switch in.FailureType {
	case repoconfig.FailureBuild:
		return alert(RuleBuildFailure, "This is a build_failure: nothing was deployed, so nothing is rolled back.")
	case repoconfig.FailureTest:
		return alert(RuleTestFailure, "This is a test_failure: nothing was deployed, so nothing is rolled back.")
	}
	prev, live := in.Previous, in.Live
	switch {
	case prev == nil:
		return alert(pick(limitRule, RuleNoPreviousVersion),
			"No earlier release is known to roll back to; a human has to decide.")
	case !prev.Eligible:
		return alert(pick(limitRule, RulePreviousNotEligible),
			"The previous release %s is not a safe rollback target: %s", describe(prev), sentence(prev.Evidence))
	case in.FailedVersion == "":
		return alert(RuleFailedVersionUnknown,
			"The failed version is not known, so ripcord cannot tell whether it is the one running; not rolling back.")
	case !live.Known || (live.Version == "" && live.Digest == ""):
		return alert(RuleLiveVersionUnknown, "The running version cannot be read%s; not rolling back blind.", colon(live.Error))
	case live.Version == "":
		return alert(RuleDigestPinned,
			"The running image is pinned by digest only (%s), so it cannot be compared with the failed version %s; not rolling back.",
			live.Digest, in.FailedVersion)
	case live.Version != in.FailedVersion:
		return verdict{ActionSkip, RuleSkipOtherVersionLive, fmt.Sprintf(
			"%s is running, not the failed %s, so there is nothing to roll back (it never reached the environment, or someone rolled back already).",
			live.Version, in.FailedVersion)}
	case in.RollbackMode == "":
		return alert(RuleNoRollbackMode,
			"The environment has no rollback configured (rollback.mode in .github/ripcord.yml); roll back by hand.")
	case !contains(in.AvailableModes, in.RollbackMode):
		return alert(RuleModeUnavailable,
			"Would roll back to %s, but rollback mode %s is not available yet; roll back by hand.", describe(prev), in.RollbackMode)
	}
	return verdict{ActionRollback, RuleRollback, fmt.Sprintf("Rolling back from %s to %s with mode %s: %s",
		in.FailedVersion, describe(prev), in.RollbackMode, sentence(prev.Evidence))}
}

// pick names a rule-4 alert after the GitHub limit when there was one: with
// retries left, the limit is the first reason a human is needed.
func pick(limitRule, generic string) string {
	if limitRule != "" {
		return limitRule
	}
	return generic
}

func describe(t *Target) string {
	s := t.Version
	if s == "" {
		s = t.Digest
	}
	if t.ReleaseID != "" {
		s += " (release " + t.ReleaseID + ")"
	}
	return s
}

// sentence ends evidence with a full stop, or says none was given.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "no evidence was given."
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

func colon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// shortDuration prints 5m rather than 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
