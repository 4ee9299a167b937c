package rolloutflow

import (
	"fmt"
	"time"

	"github.com/ripcord/ripcord/rollout"
	"github.com/ripcord/ripcord/rollout/approval"
	"github.com/ripcord/ripcord/rollout/status"
)

// Status is rollout.status in the seed's status JSON.
type Status = status.RolloutStatus

const (
	Running        = status.Running
	PausedApproval = status.PausedApproval
	PausedFreeze   = status.PausedFreeze
	PausedQueue    = status.PausedQueue
	PausedHold     = status.PausedHold
	Succeeded      = status.Succeeded
	Failed         = status.Failed
)

// final reports whether the rollout has ended.
func final(s Status) bool { return s == Succeeded || s == Failed }

// Phase is what the machine is doing inside a status.
type Phase string

const (
	PhaseQueue    Phase = "queue"    // an older rollout of the app and environment has not ended, or a hold
	PhasePrepare  Phase = "prepare"  // the prepare workflow, once
	PhaseFreeze   Phase = "freeze"   // about to start Stage: freezes are checked
	PhaseDeploy   Phase = "deploy"   // batches of Stage's passes
	PhaseBake     Phase = "bake"     // Stage's bake and health gate
	PhaseApproval Phase = "approval" // waiting for approvals after Stage
	PhaseRollback Phase = "rollback" // on_failure's rollback dispatches
	PhaseDrain    Phase = "drain"    // failed: the deploy batches still in flight are let finish
	PhaseDone     Phase = "done"
)

// Stage states, as stages[].state shows them.
const (
	StagePending    = "pending"
	StageRunning    = "running"
	StageBaking     = "baking"
	StageSucceeded  = "succeeded"
	StageFailed     = "failed"
	StageRolledBack = "rolled-back"
)

// Batch kinds: what a dispatched run does.
const (
	KindPrepare  = "prepare"
	KindDeploy   = "deploy"
	KindRollback = "rollback"
	// KindProbe is the probe workflow of a reading on a region's runners
	// (probes.go); it is no batch and the machine never sees it.
	KindProbe = "probe"
)

// Run states of a dispatched batch.
const (
	RunDispatching = "dispatching" // claimed; the dispatch may not have reached GitHub
	RunQueued      = "queued"
	RunInProgress  = "in_progress"
	RunSuccess     = "success"
	RunFailure     = "failure"
)

// Machine is a rollout's state: everything the executor needs to carry on
// after a restart, stored as JSON on the rollout's row.
type Machine struct {
	Status Status       `json:"status"`
	Phase  Phase        `json:"phase"`
	Stage  int          `json:"stage"` // the stage being run, len(stages) when all passed
	Stages []StageState `json:"stages"`
	// Passes are the cursors of Stage's passes while it deploys; passes of
	// one stage run side by side.
	Passes []PassCursor `json:"passes,omitempty"`
	Bake   Bake         `json:"bake"` // Stage's bake and gate
	// Paused names the freeze window the rollout waits for, until PausedUntil.
	Paused        string    `json:"paused,omitempty"`
	PausedUntil   time.Time `json:"paused_until,omitzero"`
	ApprovalSince time.Time `json:"approval_since,omitzero"`
	Failure       string    `json:"failure,omitempty"`
	Rollback      *Rollback `json:"rollback,omitempty"`
}

// StageState is one stage's progress; Gate is its last red reading.
// Approval is the outcome of the approval asked after the stage, once the
// wait for it is over: approved, rejected, expired, or pending when the
// rollout was aborted during the wait ("" while it waits, when none is
// asked, and in machines stored before it was kept).
type StageState struct {
	State    string `json:"state"`
	Gate     string `json:"gate,omitempty"`
	Approval string `json:"approval,omitempty"`
}

// PassCursor is where one pass of the running stage stands.
type PassCursor struct {
	Batch  int    `json:"batch"` // the batch being deployed or baked
	Done   bool   `json:"done,omitempty"`
	Failed string `json:"failed,omitempty"`
	// BatchBake is the gate after Batch (batch_bake), nil outside it.
	BatchBake *Bake `json:"batch_bake,omitempty"`
}

// Bake is a timed gate: readings every interval from From for its duration.
type Bake struct {
	From  time.Time `json:"from,omitzero"`
	Reads int       `json:"reads"` // index of the last reading taken
	Red   int       `json:"red"`   // consecutive red readings
	// Last is when the last reading was taken (as of); zero in machines
	// stored before it was kept.
	Last time.Time `json:"last,omitzero"`
}

// Rollback is on_failure's work: the batches to dispatch again with the
// previous version, one after the other.
type Rollback struct {
	Queue   []Ref  `json:"queue"`
	Next    int    `json:"next"`
	Outcome string `json:"outcome"` // running | succeeded | failed
	Reason  string `json:"reason,omitempty"`
}

// Ref names one dispatch of a rollout: a batch of a pass of a stage, for
// deploy or rollback; the prepare run is stage, pass and batch -1.
type Ref struct {
	Kind  string `json:"kind"`
	Stage int    `json:"stage"`
	Pass  int    `json:"pass"`
	Batch int    `json:"batch"`
}

// PrepareRef is the prepare workflow's dispatch.
var PrepareRef = Ref{Kind: KindPrepare, Stage: -1, Pass: -1, Batch: -1}

// Run is what is known of a dispatched batch.
type Run struct {
	State        string
	RunID        int64
	Detail       string
	DispatchedAt time.Time
	// Unread is set (never stored) when this tick asked GitHub about the
	// run and had no answer (5xx, network): its State is what was last
	// known, not that it still waits, so queue_timeout does not judge it
	// until it is read again (timedOut).
	Unread bool
}

// Approval is one vote on the rollout's wait after Stage.
type Approval struct {
	Login   string
	Approve bool
	At      time.Time
}

// FreezeCheck finds a freeze window active at now over any of regions.
type FreezeCheck func(regions []string, now time.Time) (what string, until time.Time, ok bool)

// Inputs are what the machine reads on a tick; all of it comes from the
// database except Now.
type Inputs struct {
	Now       time.Time
	Plan      *rollout.Plan
	Settings  Settings
	Runs      map[Ref]Run
	Approvals []Approval // votes on the current stage
	Author    string     // who opened or merged the release, comma-separated: they cannot approve
	// AbortBy, when set, stops the rollout as a failure with AbortReason.
	AbortBy, AbortReason string
	Freeze               FreezeCheck
	// HasPrevious: there is a version to roll back to.
	HasPrevious bool
	// NoPrevious, without HasPrevious, says why there is none ("": the
	// environment has no earlier release).
	NoPrevious string
	// Ahead names the oldest rollout of the same app and environment that
	// started before this one and has not ended ("" when none). It is read
	// only while the machine is queued.
	Ahead string
	// Hold, when set, says why the rollout may not start on its own: it was
	// queued behind a rollout that failed after deploying (see holdBehind).
	// A person lifts it by approving, or aborts the rollout.
	Hold string
}

// ActionKind is what the shell must do for the machine to go on.
type ActionKind int

const (
	ActWait     ActionKind = iota // nothing to do before Until (zero: an event)
	ActDispatch                   // dispatch Ref
	ActRead                       // take Read
	ActDone                       // the rollout has ended
)

// Action is the machine's request to the shell.
type Action struct {
	Kind  ActionKind
	Ref   Ref
	Read  ReadRequest
	Until time.Time
}

// ReadRequest is one health reading: the stage's gate (Pass and Batch -1)
// or a batch's gate (batch_bake, probes only).
type ReadRequest struct {
	Stage, Pass, Batch, N int
}

// Event is something worth an audit line, and for passes a metric.
type Event struct {
	Type    string
	Message string
	Pass    *rollout.Pass // set for a pass that concluded
	Outcome string        // succeeded | failed | rolled-back
}

// NewMachine is a rollout about to start: queued until no older rollout of
// its app and environment is left running.
func NewMachine(p *rollout.Plan) Machine {
	m := Machine{Status: Running, Phase: PhaseQueue, Stages: make([]StageState, len(p.Stages))}
	for i := range m.Stages {
		m.Stages[i].State = StagePending
	}
	return m
}

// Next moves the machine as far as in allows and returns what the shell
// must do next, with the events of the moves.
func (m *Machine) Next(in Inputs) (Action, []Event) {
	var evs []Event
	for range 10000 {
		act, moved := m.step(in, &evs)
		if !moved {
			return act, evs
		}
	}
	panic("rolloutflow: the machine did not settle") // a bug, never input
}

func (m *Machine) step(in Inputs, evs *[]Event) (Action, bool) {
	if in.AbortBy != "" && m.Phase == PhaseQueue {
		// Nothing was deployed: there is nothing for on_failure to undo.
		m.end(Failed, fmt.Sprintf("aborted by @%s before it started: %s", in.AbortBy, in.AbortReason), evs)
		m.Paused = ""
		return Action{}, true
	}
	if in.AbortBy != "" && !final(m.Status) && m.Phase != PhaseRollback && m.Phase != PhaseDone {
		if m.Phase == PhaseApproval {
			// The stage before the approval passed: the abort stops the
			// one the approval holds back, as a rejection does.
			m.Stages[m.Stage].Approval = string(approval.Pending)
			m.Stage++
		}
		m.fail(in, min(m.Stage, len(m.Stages)-1), fmt.Sprintf("aborted by @%s: %s", in.AbortBy, in.AbortReason), evs)
		return Action{}, true
	}
	switch m.Phase {
	case PhaseQueue:
		return m.queue(in, evs)
	case PhasePrepare:
		return m.prepare(in, evs)
	case PhaseFreeze:
		return m.freeze(in, evs)
	case PhaseDeploy:
		return m.deploy(in, evs)
	case PhaseBake:
		return m.bake(in, evs)
	case PhaseApproval:
		return m.approval(in, evs)
	case PhaseRollback:
		return m.rollback(in, evs)
	case PhaseDrain:
		return m.drain(in, evs)
	}
	return Action{Kind: ActDone}, false
}

// queuePoll is how often a queued rollout looks again at the one ahead of
// it; the end of that rollout also wakes it at once.
const queuePoll = 5 * time.Minute

// queue holds a rollout while an older one of its app and environment has
// not ended: two rollouts side by side would deploy two versions to the
// same targets, each wave undoing the other's. Rollouts go in the order
// they started; one that should not wait is for its elder to be aborted.
//
// A hold comes first: a rollout queued behind one that failed after
// deploying is likely to carry the same fault (it was merged on top of
// it), so it does not start when the queue clears; the person who lifts
// the hold decides.
func (m *Machine) queue(in Inputs, evs *[]Event) (Action, bool) {
	if in.Hold != "" {
		if m.Status != PausedHold || m.Paused != in.Hold {
			m.Status, m.Paused = PausedHold, in.Hold
			*evs = append(*evs, Event{Type: "paused-hold", Message: "held: " + in.Hold + "; approve to start it, or abort it"})
			return Action{}, true
		}
		return Action{Kind: ActWait}, false // the vote that lifts it ticks
	}
	if m.Status == PausedHold {
		*evs = append(*evs, Event{Type: "resumed", Message: "the hold is lifted"})
		m.Status, m.Paused = Running, ""
		return Action{}, true
	}
	if in.Ahead != "" {
		if m.Status != PausedQueue || m.Paused != in.Ahead {
			m.Status, m.Paused = PausedQueue, in.Ahead
			*evs = append(*evs, Event{Type: "paused-queue", Message: waitsFor(in.Ahead)})
			return Action{}, true
		}
		return Action{Kind: ActWait, Until: in.Now.Add(queuePoll)}, false
	}
	if m.Status == PausedQueue {
		*evs = append(*evs, Event{Type: "resumed", Message: m.Paused + " has ended"})
	}
	m.Status, m.Paused = Running, ""
	m.Phase = PhasePrepare
	return Action{}, true
}

// waitsFor is the audit line of a rollout queued behind ahead.
func waitsFor(ahead string) string { return "waits for " + ahead + " to end" }

func (m *Machine) prepare(in Inputs, evs *[]Event) (Action, bool) {
	if in.Settings.Prepare == "" {
		m.Phase = PhaseFreeze
		return Action{}, true
	}
	run, ok := in.Runs[PrepareRef]
	switch {
	case !ok:
		return Action{Kind: ActDispatch, Ref: PrepareRef}, false
	case run.State == RunSuccess:
		m.Phase = PhaseFreeze
		*evs = append(*evs, Event{Type: "prepare", Message: "prepare workflow " + in.Settings.Prepare + " succeeded"})
		return Action{}, true
	case run.State == RunFailure:
		m.end(Failed, "prepare workflow "+in.Settings.Prepare+" failed: "+run.Detail, evs)
		return Action{}, true
	case timedOut(run, in):
		m.end(Failed, "prepare workflow "+in.Settings.Prepare+": no runner picked it up within queue_timeout", evs)
		return Action{}, true
	}
	return waitFor(run, in), false
}

func (m *Machine) freeze(in Inputs, evs *[]Event) (Action, bool) {
	if m.Stage >= len(in.Plan.Stages) {
		m.end(Succeeded, "", evs)
		return Action{}, true
	}
	st := in.Plan.Stages[m.Stage]
	if in.Freeze != nil {
		if what, until, ok := in.Freeze(st.Regions(), in.Now); ok {
			if m.Status != PausedFreeze || m.Paused != what || !m.PausedUntil.Equal(until) {
				m.Status, m.Paused, m.PausedUntil = PausedFreeze, what, until
				*evs = append(*evs, Event{Type: "paused-freeze", Message: fmt.Sprintf("stage %s waits for %s until %s",
					st.Name, what, until.UTC().Format(time.RFC3339))})
				return Action{}, true
			}
			return Action{Kind: ActWait, Until: until}, false
		}
	}
	if m.Status == PausedFreeze {
		*evs = append(*evs, Event{Type: "resumed", Message: fmt.Sprintf("stage %s: %s is over", st.Name, m.Paused)})
	}
	m.Status, m.Paused, m.PausedUntil = Running, "", time.Time{}
	m.Stages[m.Stage].State = StageRunning
	m.Passes = make([]PassCursor, len(st.Passes))
	m.Phase = PhaseDeploy
	*evs = append(*evs, Event{Type: "stage-started", Message: "stage " + st.Name + " started"})
	return Action{}, true
}

// end closes the rollout with status s.
func (m *Machine) end(s Status, failure string, evs *[]Event) {
	m.Status, m.Phase = s, PhaseDone
	if failure != "" {
		m.Failure = failure
	}
	*evs = append(*evs, Event{Type: string(s), Message: "rollout " + string(s) + suffix(failure)})
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// waiting reports whether a run has not started on a runner yet.
func waiting(r Run) bool { return r.State == RunDispatching || r.State == RunQueued }

// timedOut reports whether a run has waited for a runner past its
// queue_timeout. A run GitHub could not be asked about on this tick
// (Unread) has not: it may have started, or ended, meanwhile.
func timedOut(r Run, in Inputs) bool {
	return waiting(r) && !r.Unread && !in.Now.Before(r.DispatchedAt.Add(in.Settings.QueueTimeout))
}

// waitFor waits for a run: until its queue timeout while it is queued,
// for an event once it runs. An unread run is waited for as one that
// runs: the next poll asks about it again.
func waitFor(r Run, in Inputs) Action {
	if waiting(r) && !r.Unread {
		return Action{Kind: ActWait, Until: r.DispatchedAt.Add(in.Settings.QueueTimeout)}
	}
	return Action{Kind: ActWait}
}

// earliest is the sooner of two waits; a zero Until waits for an event.
func earliest(a, b Action) Action {
	if a.Until.IsZero() || (!b.Until.IsZero() && b.Until.Before(a.Until)) {
		return b
	}
	return a
}
