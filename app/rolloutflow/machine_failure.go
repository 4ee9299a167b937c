package rolloutflow

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripcord/ripcord/rollout"
	"github.com/ripcord/ripcord/rollout/approval"
)

// approval waits after a wave in approvals_between: rollout/approval
// decides the votes so far. A rejection or the expiry fails the next stage,
// the one the approval holds back, and applies on_failure (seed 001): the
// stage before the approval passed its gate, so it stays succeeded, counts
// in rollout_progress, and is one of the stages already passed, which only
// rollback-all takes back.
func (m *Machine) approval(in Inputs, evs *[]Event) (Action, bool) {
	p := in.Settings.approvals()
	votes := make([]approval.Approval, len(in.Approvals))
	for i, a := range in.Approvals {
		votes[i] = approval.Approval{User: a.Login, Approve: a.Approve, At: a.At}
	}
	state, why := approval.Decide(p, authors(in.Author), m.ApprovalSince, votes, in.Now)
	switch state {
	case approval.Approved:
		*evs = append(*evs, Event{Type: "approved", Message: "wave " + in.Plan.Stages[m.Stage].Wave + " " + why})
		m.Status, m.ApprovalSince = Running, time.Time{}
		m.Stages[m.Stage].Approval = string(state)
		m.Stage++
		m.Phase = PhaseFreeze
		return Action{}, true
	case approval.Rejected, approval.Expired:
		// bake asks an approval only before a next stage.
		m.Stages[m.Stage].Approval = string(state)
		m.Stage++
		m.fail(in, m.Stage, "approval "+why, evs)
		return Action{}, true
	}
	return Action{Kind: ActWait, Until: m.ApprovalSince.Add(p.Expiry)}, false
}

// authors splits the comma-separated logins that may not approve.
func authors(s string) []string { return strings.Split(s, ",") }

// fail fails stage for why and starts on_failure: stop ends the rollout,
// rollback-wave dispatches the stage's batches again with the previous
// version, rollback-all then the passed stages too, newest first.
func (m *Machine) fail(in Inputs, stage int, why string, evs *[]Event) {
	st := in.Plan.Stages[stage]
	started := m.Stages[stage].State != StagePending
	m.Stages[stage].State = StageFailed
	if m.Stages[stage].Gate == "" {
		m.Stages[stage].Gate = why
	}
	m.Passes, m.ApprovalSince, m.Paused, m.PausedUntil = nil, time.Time{}, "", time.Time{}
	// ripcord_rollout_passes_total counts the passes that concluded: those
	// of a stage that never started (failed before it, by a rejected
	// approval or an abort) did not.
	if started {
		for i := range st.Passes {
			*evs = append(*evs, Event{Type: "pass", Pass: &st.Passes[i], Outcome: "failed"})
		}
	}
	failure := fmt.Sprintf("stage %s: %s", st.Name, why)
	queue := rollbackQueue(in, stage)
	if in.Plan.OnFailure == rollout.Stop || in.Plan.OnFailure == "" || len(queue) == 0 {
		m.end(Failed, failure, evs)
		m.awaitInFlight(in, evs)
		return
	}
	m.Status, m.Failure = Failed, failure
	*evs = append(*evs, Event{Type: "failed", Message: "rollout failed: " + failure + "; on_failure " + string(in.Plan.OnFailure)})
	if !in.HasPrevious {
		m.Rollback = &Rollback{Outcome: "failed", Reason: cmp.Or(in.NoPrevious, "no earlier release of the environment to roll back to")}
		m.Phase = PhaseDone
		*evs = append(*evs, Event{Type: "rollback-failed", Message: "rollback failed: " + m.Rollback.Reason})
		m.awaitInFlight(in, evs)
		return
	}
	m.Rollback, m.Phase = &Rollback{Queue: queue, Outcome: "running"}, PhaseRollback
}

// rollbackQueue lists what on_failure dispatches again, in the reverse of
// the order the deploy went (seed 001: the stages already passed go back
// "in ordine inverso"): the failed stage's batches that were dispatched,
// then (rollback-all) every batch of the passed stages, the newest stage
// first. Inside a pass the newest batch goes first too, as each pass
// deployed its batch k before its k+1. The passes of a stage deployed side
// by side, with no order between them: they go in plan order, so the
// failed pass, whose batches have ended, is not held behind a sibling
// pass's batch still in flight (rollback waits for that one).
func rollbackQueue(in Inputs, stage int) []Ref {
	var q []Ref
	for ref := range in.Runs {
		if ref.Kind == KindDeploy && ref.Stage == stage {
			q = append(q, Ref{Kind: KindRollback, Stage: stage, Pass: ref.Pass, Batch: ref.Batch})
		}
	}
	slices.SortFunc(q, func(a, b Ref) int { return cmp.Or(a.Pass-b.Pass, b.Batch-a.Batch) })
	if in.Plan.OnFailure != rollout.RollbackAll {
		return q
	}
	for s := stage - 1; s >= 0; s-- {
		for pi, p := range in.Plan.Stages[s].Passes {
			for bi := len(p.Batches) - 1; bi >= 0; bi-- {
				q = append(q, Ref{Kind: KindRollback, Stage: s, Pass: pi, Batch: bi})
			}
		}
	}
	return q
}

// rollback dispatches the queue one batch after the other; a failed
// rollback run ends it.
func (m *Machine) rollback(in Inputs, evs *[]Event) (Action, bool) {
	r := m.Rollback
	if r.Next >= len(r.Queue) {
		r.Outcome, m.Phase = "succeeded", PhaseDone
		*evs = append(*evs, Event{Type: "rollback-succeeded", Message: "rollback to the previous release succeeded"})
		return Action{}, true
	}
	ref := r.Queue[r.Next]
	pass := in.Plan.Stages[ref.Stage].Passes[ref.Pass]
	name := rollout.StepName("rollback", pass.Name, ref.Batch)
	run, ok := in.Runs[ref]
	switch {
	case !ok:
		// A sibling pass's batch may still be deploying when another pass
		// fails: its run is let finish (a copy cut short is harder to
		// recover), and its hosts are taken back only after, or the
		// rollback could run under it and leave the new version behind.
		deploy := Ref{Kind: KindDeploy, Stage: ref.Stage, Pass: ref.Pass, Batch: ref.Batch}
		if d, ok := in.Runs[deploy]; ok && deploying(d, in) {
			return waitFor(d, in), false
		}
		return Action{Kind: ActDispatch, Ref: ref}, false
	case run.State == RunFailure:
		r.Reason = fmt.Sprintf("%s: workflow run %d failed%s", name, run.RunID, suffix(run.Detail))
	case timedOut(run, in):
		r.Reason = fmt.Sprintf("%s: no runner for region %s", name, pass.Region)
	case run.State == RunSuccess:
		r.Next++
		if r.Next == len(r.Queue) || r.Queue[r.Next].Stage != ref.Stage {
			m.Stages[ref.Stage].State = StageRolledBack
			for i := range in.Plan.Stages[ref.Stage].Passes {
				*evs = append(*evs, Event{Type: "pass", Pass: &in.Plan.Stages[ref.Stage].Passes[i], Outcome: "rolled-back"})
			}
		}
		return Action{}, true
	default:
		return waitFor(run, in), false
	}
	r.Outcome, m.Phase = "failed", PhaseDone
	*evs = append(*evs, Event{Type: "rollback-failed", Message: "rollback failed: " + r.Reason})
	m.awaitInFlight(in, evs)
	return Action{}, true
}

// awaitInFlight keeps a failed rollout that has nothing more to do from
// ending (PhaseDone) while deploy batches it dispatched may still change
// their hosts: a sibling pass's batch is let finish (a copy cut short is
// harder to recover), and the end of the rollout is what lets the rollouts
// queued behind it go, or be approved, on the same hosts. Its status says
// failed already; Paused says what it waits for.
func (m *Machine) awaitInFlight(in Inputs, evs *[]Event) {
	names := deploysInFlight(in)
	if len(names) == 0 {
		return
	}
	m.Phase, m.Paused = PhaseDrain, "waits for the batches in flight to end: "+strings.Join(names, ", ")
	*evs = append(*evs, Event{Type: "waiting-batches", Message: "the rollout " + m.Paused})
}

// drain waits for the deploy batches in flight of a failed rollout, then
// ends it.
func (m *Machine) drain(in Inputs, evs *[]Event) (Action, bool) {
	if len(deploysInFlight(in)) == 0 {
		m.Phase, m.Paused = PhaseDone, ""
		*evs = append(*evs, Event{Type: "batches-ended", Message: "the batches in flight have ended: the rollout has ended"})
		return Action{}, true
	}
	wait := Action{Kind: ActWait}
	for ref, run := range in.Runs {
		if ref.Kind == KindDeploy && deploying(run, in) {
			wait = earliest(wait, waitFor(run, in))
		}
	}
	return wait, false
}

// deploysInFlight names the deploy batches that are deploying, in plan
// order.
func deploysInFlight(in Inputs) []string {
	var refs []Ref
	for ref, run := range in.Runs {
		if ref.Kind == KindDeploy && deploying(run, in) {
			refs = append(refs, ref)
		}
	}
	slices.SortFunc(refs, func(a, b Ref) int {
		return cmp.Or(a.Stage-b.Stage, a.Pass-b.Pass, a.Batch-b.Batch)
	})
	names := make([]string, len(refs))
	for i, ref := range refs {
		names[i] = in.Plan.Stages[ref.Stage].Passes[ref.Pass].Batches[ref.Batch].Name
	}
	return names
}

// deploying reports whether a deploy run may still change its hosts: it
// runs, or it waits for a runner within its queue_timeout, or GitHub could
// not say on this tick (Unread) what became of it.
func deploying(r Run, in Inputs) bool {
	switch {
	case r.Unread:
		return true
	case waiting(r):
		return in.Now.Before(r.DispatchedAt.Add(in.Settings.QueueTimeout))
	}
	return r.State == RunInProgress
}
