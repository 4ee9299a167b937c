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
}

// SettingsFor fills the settings from the plan; ref is the branch the
// deploy workflow is dispatched on (the repository's default branch).
func SettingsFor(p *rollout.Plan, ref string) Settings {
	a := p.Approvals
	return Settings{
		Workflow:        cmp.Or(p.Workflow, rollout.DefaultWorkflow),
		Prepare:         p.Prepare,
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
