// Package recovery decides what ripcord does about a failed deploy: retry it,
// roll back, skip, or alert a human. The decision is a pure function of what
// the caller loaded (the run, the releases, the live version, the policy) and
// the time; executing it belongs to the shell around it.
package recovery

import "time"

// Action is what a Decision asks for.
type Action string

// Actions, as shown to users and stored with the decision.
const (
	ActionRetry    Action = "retry"
	ActionRollback Action = "rollback"
	ActionSkip     Action = "skip"
	ActionAlert    Action = "alert"
)

// Rule ids name the rule that decided; they are stable so dashboards,
// audit queries and docs can refer to them.
const (
	RuleRetry                = "retry"
	RuleRunUnknown           = "alert-run-unknown"
	RuleRunNotCompleted      = "alert-run-not-completed"
	RuleRerunLimit           = "alert-rerun-limit"
	RuleRunTooOld            = "alert-run-too-old"
	RuleBuildFailure         = "alert-build-failure"
	RuleTestFailure          = "alert-test-failure"
	RuleRollback             = "rollback"
	RuleSkipOtherVersionLive = "skip-other-version-live"
	RuleFailedVersionUnknown = "alert-failed-version-unknown"
	RuleLiveVersionUnknown   = "alert-live-version-unknown"
	RuleDigestPinned         = "alert-digest-pinned"
	RuleNoPreviousVersion    = "alert-no-previous-version"
	RulePreviousNotEligible  = "alert-previous-not-eligible"
	RuleNoRollbackMode       = "alert-no-rollback-mode"
	RuleModeUnavailable      = "alert-mode-unavailable"
)

// Audit event names from DESIGN.md that a decision emits.
const (
	EventFailureDetected            = "failure_detected"
	EventRetryInitiated             = "retry_initiated"
	EventRollbackInitiated          = "rollback_initiated"
	EventRollbackSkipped            = "rollback_skipped"
	EventManualInterventionRequired = "manual_intervention_required"
)

// GitHub's own limits on re-running a workflow run.
const (
	MaxReRuns = 50
	MaxRunAge = 30 * 24 * time.Hour
)

// Input is everything the decision looks at.
type Input struct {
	Now time.Time
	// FailureType comes from ClassifyJobs or the failure fact; "" is unknown.
	FailureType string
	// RetryCount counts the failures of this deployment, this one included
	// (seed 000 increments before deciding); values below 1 count as 1.
	RetryCount int
	Policy     Policy
	Run        Run
	// FailedVersion is the version (image tag) whose deploy failed.
	FailedVersion string
	// Previous is the release to roll back to, with the eligibility answer;
	// nil when no earlier release is known.
	Previous *Target
	Live     Live
	// RollbackMode is the environment's rollback.mode, "" when it has none.
	RollbackMode string
	// AvailableModes are the rollback modes this build can carry out.
	AvailableModes []string
	// Due is set when a scheduled retry is decided again as it falls due:
	// its backoff has been waited, so a retry is due now and GitHub's
	// limits are checked now, not one more backoff later.
	Due bool
}

// Run is the failed workflow run as GitHub reported it.
type Run struct {
	ID        int64 // 0: unknown, nothing to re-run
	Completed bool  // GitHub re-runs completed runs only
	Attempt   int   // run_attempt: 1 for the original run, so re-runs so far = Attempt-1
	CreatedAt time.Time
}

// Target is an earlier release and why it is (or is not) a safe target.
type Target struct {
	ReleaseID string
	Version   string
	Digest    string
	Eligible  bool
	Evidence  string // the eligibility answer's reason, e.g. which record was healthy when
}

// Live is the version running in the environment as the cluster reports it.
type Live struct {
	Known   bool
	Version string // image tag; "" when the image is pinned by digest only
	Digest  string
	Error   string // why it could not be read, when !Known
}

// Decision is what to do and why.
type Decision struct {
	Action Action
	Rule   string
	// Reason is the sentence a developer reads on the check run and in the audit log.
	Reason string
	// Backoff and RetryAt are set for retries: wait Backoff, re-run at RetryAt.
	Backoff time.Duration
	RetryAt time.Time
	// Attempt is this failure's retry number, MaxAttempts the policy's max_retries.
	Attempt     int
	MaxAttempts int
	// Target is the release to roll back to, for rollbacks.
	Target *Target
	// AuditEvents are the events this decision writes, in order.
	AuditEvents []string
}
