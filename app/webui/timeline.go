package webui

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/ripcord/ripcord/records"
)

// Rollout is a release's rollout in waves, as a rollout executor reports
// it (GET /api/v1/rollouts/{id} is the whole of it).
type Rollout struct {
	ID string
	// Status is rollout.status: running, paused-approval, paused-freeze,
	// paused-queue, paused-hold, succeeded or failed.
	Status    string
	Progress  string // stages passed / stages, "1/3"
	Stage     string // the current, or the failed, stage
	Paused    string // what holds the rollout: a freeze, an approval or the rollout ahead
	OnFailure string
	Rollback  string // what on_failure's rollback did; "" when there is none
	// Drift lists the stages a failed rollout left on the new version.
	Drift  []string
	Stages []Stage
	// Deployed: a batch of the release was deployed to hosts (a deploy
	// run succeeded), whatever its record says.
	Deployed bool
}

// Stage is one step of a release's rollout (a wave: canary, a region, an
// AZ).
type Stage struct {
	Name       string
	Wave       string
	State      string // pending, running, baking, succeeded, failed, rolled-back
	StartedAt  *time.Time
	FinishedAt *time.Time
	Gate       string // the last red gate reading; "" while green
	Approval   string // the approval after the stage, "" when none is asked
	Passes     string // its passes and hosts, "eu-1a (2 hosts, 1/2 batches)"
}

// Rollouts finds the rollout of a release; ok is false when the release
// was not rolled out in waves.
type Rollouts interface {
	Rollout(ctx context.Context, releaseID string) (r Rollout, ok bool, err error)
}

// DeployedLister is what a Rollouts may also tell the releases list:
// which of releaseIDs a rollout of theirs deployed to hosts, with the
// rollout's status. Their records may still be opened (no fact came), and
// the list must not call them pull requests that never ran.
type DeployedLister interface {
	Deployed(ctx context.Context, releaseIDs []string) (map[string]string, error)
}

// noRollouts is used until a rollout executor is wired in: every release
// shows "no rollout".
type noRollouts struct{}

func (noRollouts) Rollout(context.Context, string) (Rollout, bool, error) {
	return Rollout{}, false, nil
}

// event is one line of a release's timeline.
type event struct {
	At      time.Time
	When    string
	Type    records.AuditType
	Class   string
	Message string
	Data    []field
}

type field struct{ Key, Value string }

// stageView is a Stage as the page shows it.
type stageView struct {
	Stage
	Class         string
	ApprovalClass string
}

// rolloutView is the rollout section of the release page.
type rolloutView struct {
	Rollout
	Class  string
	Stages []stageView
	// StatusURL is the rollout's status JSON (GET /api/v1/rollouts/{id}).
	StatusURL string
}

// releaseView is the release page.
type releaseView struct {
	Release row
	Record  records.Record
	// RollbackFrom is the `ripcord rollback` line that replaces this
	// release when it is the current one.
	RollbackFrom string
	Who          []string // people who acted on the release, from the audit events
	Events       []event
	// Rollout is nil when the release was not rolled out in waves.
	Rollout *rolloutView
	// Form is the Roll back form; the handler adds it (it needs the session).
	Form *rollbackForm
}

// buildRelease lays out one release: events oldest first (whatever order
// they come in), the people named in them, and its rollout's stages.
// elsewhere are as buildRow takes them.
func buildRelease(rec records.Record, same, elsewhere []records.Record, window int, events []records.AuditEvent, ro Rollout, rolledOut bool, now time.Time) releaseView {
	v := releaseView{Release: buildRow(rec, sameOrSelf(rec, same), elsewhere, window, now), Record: rec, RollbackFrom: rollbackCLI(rec, "")}
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b records.AuditEvent) int { return a.At.Compare(b.At) })
	seen := map[string]bool{}
	for _, e := range sorted {
		v.Events = append(v.Events, event{At: e.At, When: ago(e.At, now), Type: e.Type, Class: eventClass(e.Type),
			Message: e.Message, Data: fields(e.Data)})
		if u, ok := e.Data["user"].(string); ok && u != "" && !seen[u] {
			seen[u] = true
			v.Who = append(v.Who, u)
		}
	}
	if rolledOut {
		v.Rollout = buildRollout(ro)
		if ro.Deployed {
			v.Release.rolledOut(ro.Status)
		}
	}
	return v
}

// buildRollout colours the rollout's status and stages.
func buildRollout(ro Rollout) *rolloutView {
	v := &rolloutView{Rollout: ro, Class: rolloutClass(ro.Status), StatusURL: "/api/v1/rollouts/" + url.PathEscape(ro.ID)}
	for _, s := range ro.Stages {
		v.Stages = append(v.Stages, stageView{Stage: s, Class: stageClass(s.State), ApprovalClass: approvalClass(s.Approval)})
	}
	return v
}

// sameOrSelf makes sure rec is among the records eligibility reads (the
// newest N may not include an old release).
func sameOrSelf(rec records.Record, same []records.Record) []records.Record {
	for _, r := range same {
		if r.ReleaseID == rec.ReleaseID {
			return same
		}
	}
	out := append(slices.Clone(same), rec)
	slices.SortStableFunc(out, newestFirst)
	return out
}

// fields lists an event's data in key order, so the page is stable.
func fields(data map[string]any) []field {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]field, 0, len(keys))
	for _, k := range keys {
		out = append(out, field{Key: k, Value: fmt.Sprint(data[k])})
	}
	return out
}

func eventClass(t records.AuditType) string {
	switch t {
	case records.AuditFailureDetected, records.AuditHealthCheckFailed, records.AuditRollbackFailed,
		records.AuditManualInterventionRequired, records.AuditStallDetected, records.AuditDriftDetected,
		records.AuditCommandRefused:
		return "bad"
	case records.AuditHealthCheckPassed, records.AuditRollbackCompleted, records.AuditApprovalGranted:
		return "ok"
	case records.AuditRollbackInitiated, records.AuditRetryInitiated, records.AuditRollbackRequeued,
		records.AuditRollbackRateLimited:
		return "running"
	}
	return "done"
}

func stageClass(state string) string {
	switch state {
	case "succeeded", "healthy", "completed", "done":
		return "ok"
	case "failed", "aborted", "degraded", "rolled-back":
		return "bad"
	case "running", "baking", "progressing", "observing", "waiting":
		return "running"
	}
	return "done"
}

// rolloutClass colours rollout.status: a pause waits for someone, so it is
// shown like work in progress.
func rolloutClass(status string) string {
	switch status {
	case "succeeded":
		return "ok"
	case "failed":
		return "bad"
	case "running", "paused-approval", "paused-freeze", "paused-queue", "paused-hold":
		return "running"
	}
	return "done"
}

func approvalClass(state string) string {
	switch state {
	case "approved":
		return "ok"
	case "rejected", "expired":
		return "bad"
	case "pending":
		return "running"
	}
	return "done"
}
