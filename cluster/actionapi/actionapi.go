// Package actionapi is the JSON that ripcord's server and its cluster agent
// exchange about cluster actions: what the server asks for (GET
// /api/v1/clusters/{cluster}/actions) and what the agent reports back (POST
// …/actions/{id}). It holds types only, so both sides share one definition
// without the server linking the agent's Kubernetes code.
package actionapi

import "time"

// KindRollback is the one action kind so far: roll a Deployment's
// application container back to an earlier version (seed 000).
const KindRollback = "rollback"

// Action is one thing the server asks a cluster's agent to do.
type Action struct {
	ID      string `json:"id"`
	Cluster string `json:"cluster"`
	Kind    string `json:"kind"`
	// Namespace and Deployment name the workload; Container is the
	// application container, empty to let the agent pick the one named
	// like the Deployment or the only one.
	Namespace  string `json:"namespace"`
	Deployment string `json:"deployment"`
	Container  string `json:"container,omitempty"`
	// TargetVersion is the image tag to roll back to: the newest eligible
	// healthy release, as the server's records know it. The agent rolls
	// back to no other: without one it alerts and changes nothing.
	TargetVersion string `json:"target_version,omitempty"`
	// FailedVersion is the tag that failed: the rollback happens only when
	// it is the one running.
	FailedVersion string `json:"failed_version"`
	// ReleaseID is the rollback's own release id: the agent writes it to
	// the Deployment's ripcord.dev/release-id annotation, so the facts
	// that follow join the rollback release. RollbackOf is the failed one.
	ReleaseID  string  `json:"release_id,omitempty"`
	RollbackOf string  `json:"rollback_of,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	Health     *Health `json:"health,omitempty"`
	// CreatedAt is when the server enqueued the action.
	CreatedAt time.Time `json:"created_at"`
}

// Health overrides the agent's health-check settings for one action; a zero
// field keeps the agent's setting.
type Health struct {
	Port       int    `json:"port,omitempty"`
	Path       string `json:"path,omitempty"`
	MinHealthy int    `json:"min_healthy,omitempty"`
	// RequestTimeout and Timeout are Go durations ("5s", "5m").
	RequestTimeout string `json:"request_timeout,omitempty"`
	Timeout        string `json:"timeout,omitempty"`
}

// Actions is the answer of GET /api/v1/clusters/{cluster}/actions.
type Actions struct {
	Actions []Action `json:"actions"`
}

// Statuses an action ends in.
const (
	StatusDone   = "done"
	StatusFailed = "failed"
	// StatusNotStarted does not end the action: the agent gives it back
	// without having touched the cluster (it was stopped before its
	// patch), and the server puts it back to pending for the restarted
	// agent or another replica to claim. The action's expiry, counted
	// from when it was queued, still bounds how long it may wait.
	StatusNotStarted = "not_started"
)

// Outcomes say what a finished rollback did, in seed 000's words.
const (
	// OutcomeRolledBack: patched, rolled out and healthy (status done).
	OutcomeRolledBack = "rolled_back"
	// OutcomeSkipped: another version than the failed one was running;
	// nothing was changed (rollback_skipped; status failed, as MANA).
	OutcomeSkipped = "skipped"
	// OutcomeAlert: the live version could not be read or is pinned by
	// digest, or no previous version is known; nothing was changed and a
	// person must decide (manual_intervention_required).
	OutcomeAlert = "alert"
	// OutcomeRollbackFailed: the rollback was attempted and failed
	// (rollback_failed with its error type).
	OutcomeRollbackFailed = "rollback_failed"
	// OutcomeNotStarted: nothing was tried, nothing was changed, and the
	// action is handed out again (status not_started; Reason says why,
	// ErrorType classifies it, e.g. agent_stopped). No audit event: the
	// rollback has not happened yet, so none of seed 000's events is true.
	OutcomeNotStarted = "not_started"
)

// Result is the body of POST /api/v1/clusters/{cluster}/actions/{id}.
type Result struct {
	// Agent is the reporting agent's id; it must be the one that claimed
	// the action.
	Agent   string `json:"agent"`
	Status  string `json:"status"`
	Outcome string `json:"outcome"`
	// Reason says why, for a person; ErrorType classifies a failure
	// (seed 000: "recorded in rollback_failed with the error type").
	Reason         string `json:"reason,omitempty"`
	ErrorType      string `json:"error_type,omitempty"`
	RunningVersion string `json:"running_version,omitempty"`
	TargetVersion  string `json:"target_version,omitempty"`
	TargetImage    string `json:"target_image,omitempty"`
	// Audit are the events of seed 000 the agent saw happen, in order;
	// the server stores them under the action's release.
	Audit []AuditEvent `json:"audit,omitempty"`
}

// AuditEvent is one step of the action as the agent saw it; its type is
// one of records' audit types (rollback_initiated, health_check_passed, …).
type AuditEvent struct {
	Type    string         `json:"type"`
	At      time.Time      `json:"at"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}
