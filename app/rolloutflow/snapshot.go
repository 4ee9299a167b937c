package rolloutflow

import (
	"cmp"
	"time"

	"github.com/ripcord/ripcord/rollout"
	"github.com/ripcord/ripcord/rollout/freeze"
)

// Settings are how a plan runs on GitHub, with defaults filled in. They are
// taken from the plan when the rollout starts and kept with it, so a config
// change in the middle of a rollout does not change the rollout.
type Settings struct {
	Workflow        string           `json:"workflow"`
	Prepare         string           `json:"prepare,omitempty"`
	ProbeWorkflow   string           `json:"probe_workflow,omitempty"`
	Ref             string           `json:"ref"` // the branch workflows are dispatched on
	QueueTimeout    time.Duration    `json:"queue_timeout"`
	ApprovalCount   int              `json:"approval_count"`
	ApprovalExpiry  time.Duration    `json:"approval_expiry"`
	Permission      string           `json:"approval_permission"`
	Freezes         []rollout.Freeze `json:"freezes,omitempty"`
	FreezeOverride  bool             `json:"freeze_override,omitempty"`
	PrometheusURL   string           `json:"prometheus_url,omitempty"`
	AlertmanagerURL string           `json:"alertmanager_url,omitempty"`
}

// Snapshot is what a rollout runs: its plan and settings as they were when
// it started.
type Snapshot struct {
	Plan     *rollout.Plan `json:"plan"`
	Settings Settings      `json:"settings"`
	// HeadFrom says where the commit of the ripcord/rollout check run came
	// from: the release's git_revision, or the head of the default branch
	// when the release named none (a rollout started from the CLI).
	HeadFrom string `json:"head_from,omitempty"`
}

// Server is the server's side of rollouts: rollout.max_parallel caps every
// batch's parallel, and the Prometheus and Alertmanager URLs stand in for
// those the repository config does not name.
type Server struct {
	MaxParallel     int
	PrometheusURL   string
	AlertmanagerURL string
}

// SnapshotFor is what a rollout of p runs on a server with srv; ref is the
// branch workflows are dispatched on.
func SnapshotFor(p *rollout.Plan, ref string, srv Server) Snapshot {
	plan := p.CapParallel(srv.MaxParallel)
	s := SettingsFor(plan, ref)
	s.PrometheusURL = cmp.Or(s.PrometheusURL, srv.PrometheusURL)
	s.AlertmanagerURL = cmp.Or(s.AlertmanagerURL, srv.AlertmanagerURL)
	return Snapshot{Plan: plan, Settings: s}
}

// SettingsFor fills the settings from the plan; ref is the branch the
// deploy workflow is dispatched on (the repository's default branch).
func SettingsFor(p *rollout.Plan, ref string) Settings {
	a := p.Approvals
	return Settings{
		Workflow:        cmp.Or(p.Workflow, rollout.DefaultWorkflow),
		Prepare:         p.Prepare,
		ProbeWorkflow:   cmp.Or(p.ProbeWorkflow, rollout.DefaultProbeWorkflow),
		Ref:             ref,
		QueueTimeout:    cmp.Or(p.QueueTimeout, rollout.DefaultQueueTimeout),
		ApprovalCount:   cmp.Or(a.Count, rollout.DefaultApprovalCount),
		ApprovalExpiry:  cmp.Or(a.Expiry, rollout.DefaultApprovalExpiry),
		Permission:      cmp.Or(a.Permission, rollout.DefaultApprovalPermission),
		Freezes:         p.Freezes,
		PrometheusURL:   p.PrometheusURL,
		AlertmanagerURL: p.AlertmanagerURL,
	}
}

// approvals is the plan's approvals key as the settings keep it.
func (s Settings) approvals() rollout.Approvals {
	return rollout.Approvals{Permission: s.Permission, Count: s.ApprovalCount, Expiry: s.ApprovalExpiry}
}

// freezeCheck is the settings' freeze windows as the machine asks for them;
// nil with freeze_override, which lets the release through every window.
func (s Settings) freezeCheck() FreezeCheck {
	if s.FreezeOverride || len(s.Freezes) == 0 {
		return nil
	}
	return func(regions []string, now time.Time) (string, time.Time, bool) {
		f, until, ok := freeze.Active(s.Freezes, regions, now)
		if !ok {
			return "", time.Time{}, false
		}
		return f.Describe(), until, true
	}
}
