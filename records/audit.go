package records

import "time"

// AuditType names an audit event. The first group is MANA's vocabulary
// (seed 000), kept so its dashboards and habits carry over; the rest are
// ripcord's own.
type AuditType string

const (
	AuditDeploymentReceived         AuditType = "deployment_received"
	AuditFailureDetected            AuditType = "failure_detected"
	AuditRetryInitiated             AuditType = "retry_initiated"
	AuditRollbackInitiated          AuditType = "rollback_initiated"
	AuditRollbackSkipped            AuditType = "rollback_skipped"
	AuditHealthCheckStarted         AuditType = "health_check_started"
	AuditHealthCheckPassed          AuditType = "health_check_passed"
	AuditHealthCheckFailed          AuditType = "health_check_failed"
	AuditRollbackCompleted          AuditType = "rollback_completed"
	AuditRollbackFailed             AuditType = "rollback_failed"
	AuditStateSaved                 AuditType = "state_saved"
	AuditManualInterventionRequired AuditType = "manual_intervention_required"

	AuditFactReceived    AuditType = "fact_received"
	AuditFactIgnored     AuditType = "fact_ignored"
	AuditDriftDetected   AuditType = "drift_detected"
	AuditStallDetected   AuditType = "stall_detected"
	AuditGateEvaluated   AuditType = "gate_evaluated"
	AuditCommandReceived AuditType = "command_received"
	AuditCommandRefused  AuditType = "command_refused"
	AuditApprovalGranted AuditType = "approval_granted"
	AuditStateChanged    AuditType = "state_changed"
	AuditReleaseOpened   AuditType = "release_opened"
	// AuditRollbackRequeued: an agent gave a cluster rollback action back
	// untouched (it was stopped before the patch); the action waits for
	// the next agent's poll again.
	AuditRollbackRequeued AuditType = "rollback_requeued"
	// AuditRollbackRateLimited: the rollback pull request of a rollback of
	// the release waits for GitHub's rate limit to lift, and says until
	// when; once per wait (a reset), not per try of the job meanwhile; and
	// once more, with data alert: true, when the rollback has waited more
	// than an hour since its first wait and ripcord alerts.
	AuditRollbackRateLimited AuditType = "rollback_rate_limited"
)

// AuditTypes lists every known audit type, for filters and validation.
var AuditTypes = []AuditType{
	AuditDeploymentReceived, AuditFailureDetected, AuditRetryInitiated,
	AuditRollbackInitiated, AuditRollbackSkipped, AuditHealthCheckStarted,
	AuditHealthCheckPassed, AuditHealthCheckFailed, AuditRollbackCompleted,
	AuditRollbackFailed, AuditStateSaved, AuditManualInterventionRequired,
	AuditFactReceived, AuditFactIgnored, AuditDriftDetected, AuditStallDetected,
	AuditGateEvaluated, AuditCommandReceived, AuditCommandRefused,
	AuditApprovalGranted, AuditStateChanged, AuditReleaseOpened,
	AuditRollbackRequeued, AuditRollbackRateLimited,
}

// Valid reports whether t is a known audit type.
func (t AuditType) Valid() bool {
	for _, k := range AuditTypes {
		if t == k {
			return true
		}
	}
	return false
}

// AuditEvent is one line of a release's story. Filtering by release_id (or,
// for MANA-style deploys, the deployment id, which is then the release id)
// tells the whole story.
type AuditEvent struct {
	Type      AuditType `json:"type"`
	ReleaseID string    `json:"release_id,omitempty"`
	// DeliveryID is the webhook delivery (X-GitHub-Delivery) or request
	// that caused the event, when there was one.
	DeliveryID string         `json:"delivery_id,omitempty"`
	FactID     string         `json:"fact_id,omitempty"`
	At         time.Time      `json:"at"`
	Message    string         `json:"message"`
	Data       map[string]any `json:"data,omitempty"`
}
