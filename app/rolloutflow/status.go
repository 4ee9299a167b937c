package rolloutflow

import (
	"fmt"
	"strings"
	"time"

	"github.com/ripcord/ripcord/rollout/status"
)

// StatusJSON is GET /api/v1/rollouts/{id}: the seed's status (state,
// rollout_progress, rollout) from rollout/status, with the rollout's id,
// release and audit trail around it.
type StatusJSON struct {
	ID          string `json:"id"`
	ReleaseID   string `json:"release_id"`
	Repository  string `json:"repository"`
	App         string `json:"app"`
	Environment string `json:"environment"`
	Version     string `json:"version"`
	// HeadSHA is the commit the ripcord/rollout check run is on, and
	// HeadFrom where it came from (git_revision, or the default branch's
	// head when the release named no commit).
	HeadSHA  string `json:"head_sha,omitempty"`
	HeadFrom string `json:"head_from,omitempty"`
	status.Status
	// Waiting says, while GitHub does not answer for a batch's dispatch
	// (5xx, no answer), that the rollout, still running, waits that out
	// (however long: an outage fails no batch), since when and with which
	// error first: the audit's open unanswered line. In the list too
	// (GET /api/v1/rollouts), which reads those lines of the whole page
	// at once (openUnansweredOf) rather than each rollout's audit.
	Waiting   string      `json:"waiting,omitempty"`
	Audit     []AuditLine `json:"audit,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// deployState is the seed's top-level state of the deploy.
func deployState(m Machine) string {
	switch m.Status {
	case PausedApproval, PausedHold:
		return status.StateAwaitingApproval
	case Succeeded:
		return status.StateSuccess
	case Failed:
		return status.StateError
	}
	return status.StateRunning
}

// statusOf renders a rollout as its status JSON.
func statusOf(r Rollout, runs []Dispatched, audit []AuditLine) StatusJSON {
	m, plan := r.Machine, r.Snapshot.Plan
	s := status.New(plan)
	s.State = deployState(m)
	s.Rollout.Status = status.RolloutStatus(m.Status)
	s.Rollout.Stage = ""
	if m.Stage < len(plan.Stages) {
		s.Rollout.Stage = plan.Stages[m.Stage].Name
	}
	s.Rollout.Paused = m.Paused
	if m.Phase == PhaseApproval {
		st := r.Snapshot.Settings
		s.Rollout.Paused = fmt.Sprintf("approval of wave %s: %d approval(s) needed by %s", plan.Stages[m.Stage].Wave,
			max(st.ApprovalCount, 1), m.ApprovalSince.Add(st.ApprovalExpiry).UTC().Format(time.RFC3339))
	}
	byRef := map[Ref]Dispatched{}
	for _, d := range runs {
		byRef[d.Ref] = d
	}
	for si := range s.Rollout.Stages {
		st := &s.Rollout.Stages[si]
		st.State, st.Gate = status.StageState(m.Stages[si].State), m.Stages[si].Gate
		if st.Approval != "" {
			st.Approval = approvalState(m, si)
		}
		for pi := range st.Passes {
			for bi := range st.Passes[pi].Batches {
				if d, ok := byRef[Ref{Kind: KindDeploy, Stage: si, Pass: pi, Batch: bi}]; ok {
					st.Passes[pi].Batches[bi].State = d.State
				}
			}
		}
	}
	s.RolloutProgress = status.Progress(s.Rollout.Stages)
	if rb := m.Rollback; rb != nil {
		out := &status.Rollback{Status: rb.Outcome, Reason: rb.Reason}
		for _, ref := range rb.Queue {
			name := plan.Stages[ref.Stage].Name
			if len(out.Stages) == 0 || out.Stages[len(out.Stages)-1] != name {
				out.Stages = append(out.Stages, name)
			}
		}
		s.Rollout.Rollback = out
	}
	if m.Status == Failed && (m.Rollback == nil || m.Rollback.Outcome != "running") {
		s.Rollout.Drift = status.DriftOf(s.Rollout.Stages)
	}
	out := StatusJSON{ID: r.ID, ReleaseID: r.ReleaseID, Repository: r.Repository, App: r.App, Environment: r.Environment,
		Version: r.Version, HeadSHA: r.HeadSHA, HeadFrom: r.Snapshot.HeadFrom, Status: s, Audit: audit, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if l, ok := openUnanswered(audit); ok {
		out.Waiting = waitingFor(m, l)
	}
	return out
}

// waitingFor is the status's waiting of a rollout (m) whose audit's open
// unanswered line is l: none once it has ended.
func waitingFor(m Machine, l AuditLine) string {
	if m.Phase == PhaseDone {
		return ""
	}
	return fmt.Sprintf("since %s: %s", l.At.UTC().Format(time.RFC3339), l.Message)
}

// approvalState is the approval after stage si, for a stage that asks one.
func approvalState(m Machine, si int) string {
	if a := m.Stages[si].Approval; a != "" {
		return a
	}
	// Machines stored before Approval was kept failed the stage that
	// asked the approval.
	gate := m.Stages[si].Gate
	switch {
	case si < m.Stage:
		return "approved"
	case si > m.Stage:
		return "pending"
	case strings.HasPrefix(gate, "approval rejected"):
		return "rejected"
	case strings.HasPrefix(gate, "approval expired"):
		return "expired"
	}
	return "pending"
}
