package webui

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/ripcord/ripcord/records"
)

// Stage is one step of a release's rollout (a wave: canary, a region, an
// AZ), as a rollout executor reports it.
type Stage struct {
	Name       string
	State      string // e.g. "pending", "running", "succeeded", "failed"
	StartedAt  *time.Time
	FinishedAt *time.Time
	Message    string
}

// Rollouts finds the stages of a release's rollout; ok is false when the
// release was not rolled out in stages.
type Rollouts interface {
	Stages(ctx context.Context, releaseID string) (stages []Stage, ok bool, err error)
}

// noRollouts is used until a rollout executor is wired in: every release
// shows "no rollout".
type noRollouts struct{}

func (noRollouts) Stages(context.Context, string) ([]Stage, bool, error) { return nil, false, nil }

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
	Class string
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
	HasStage     bool
	Stages       []stageView
	// Form is the Roll back form; the handler adds it (it needs the session).
	Form *rollbackForm
}

// buildRelease lays out one release: events oldest first (whatever order
// they come in), the people named in them, and its rollout's stages.
func buildRelease(rec records.Record, same []records.Record, events []records.AuditEvent, stages []Stage, rolledOut bool, now time.Time) releaseView {
	v := releaseView{Release: buildRow(rec, sameOrSelf(rec, same), now), Record: rec, HasStage: rolledOut,
		RollbackFrom: rollbackCLI(rec, "")}
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
	for _, s := range stages {
		v.Stages = append(v.Stages, stageView{Stage: s, Class: stageClass(s.State)})
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
	case records.AuditRollbackInitiated, records.AuditRetryInitiated:
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
	case "running", "progressing", "observing", "waiting":
		return "running"
	}
	return "done"
}
