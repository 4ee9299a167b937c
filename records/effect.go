package records

// EffectKind says which executor performs an effect.
type EffectKind string

const (
	// EffectCDEvent sends a CDEvent to the configured sink.
	EffectCDEvent EffectKind = "cdevent"
	// EffectAlert notifies people (the release's check run, a chat hook…).
	EffectAlert EffectKind = "alert"
)

// CDEvent types the reducer emits: CDEvents spec 0.5.1, whose service events
// are version 0.3.0 (the seed's 0.2.0 predates that spec).
const (
	CDEventServiceDeployed   = "dev.cdevents.service.deployed.0.3.0"
	CDEventServiceUpgraded   = "dev.cdevents.service.upgraded.0.3.0"
	CDEventServiceRolledBack = "dev.cdevents.service.rolledback.0.3.0"
)

// Alert types.
const (
	AlertDrift = "drift"
	AlertStall = "stall"
	// AlertRollbackRateLimited: a rollback pull request has waited for
	// GitHub's rate limit for more than an hour (app/rollbackflow).
	AlertRollbackRateLimited = "rollback_rate_limited"
)

// Effect is something to do outside the store once the transaction that
// produced it has committed. Each runs as its own job; Key is its
// idempotency key, derived from what happened rather than from when, so a
// redelivered fact or a replay can never send the same CDEvent or alert
// twice.
type Effect struct {
	Kind EffectKind `json:"kind"`
	// Type is the CDEvent type for cdevent effects, the alert type
	// (drift, stall) for alerts.
	Type      string            `json:"type"`
	Key       string            `json:"key"`
	ReleaseID string            `json:"release_id,omitempty"`
	Message   string            `json:"message,omitempty"`
	Data      map[string]string `json:"data,omitempty"`
}

// cdevent builds the CDEvent effect for a record. The key holds the event
// type and the release, so each release sends each event type at most once.
func cdevent(typ string, r Record) Effect {
	data := map[string]string{
		"app":         r.App,
		"environment": r.Environment,
		"cluster":     r.Cluster,
		"image":       r.Image,
		"digest":      r.ResolvedDigest(),
		"kind":        string(r.Kind),
	}
	if r.RollbackOf != "" {
		data["rollback_of"] = r.RollbackOf
	}
	// The effect may run later; the event's timestamp is when it happened.
	if r.HealthyAt != nil {
		data["healthy_at"] = stamp(*r.HealthyAt)
	}
	return Effect{
		Kind:      EffectCDEvent,
		Type:      typ,
		Key:       "cdevent/" + typ + "/" + r.ReleaseID,
		ReleaseID: r.ReleaseID,
		Data:      data,
	}
}
