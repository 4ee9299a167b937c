package rolloutflow

import (
	"fmt"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

// deploy moves the passes of the running stage through their batches, side
// by side; the first failed pass fails the stage and no further batch of it
// is dispatched.
func (m *Machine) deploy(in Inputs, evs *[]Event) (Action, bool) {
	st := in.Plan.Stages[m.Stage]
	for pi := range m.Passes {
		if moved := m.settlePass(in, st, pi); moved {
			return Action{}, true
		}
		if f := m.Passes[pi].Failed; f != "" {
			m.fail(in, m.Stage, f, evs)
			return Action{}, true
		}
	}
	wait, allDone := Action{Kind: ActWait}, true
	for pi, c := range m.Passes {
		if c.Done {
			continue
		}
		allDone = false
		if c.BatchBake != nil {
			act, verdict := m.gate(in, c.BatchBake, *st.BatchBake, true, ReadRequest{Stage: m.Stage, Pass: pi, Batch: c.Batch})
			switch verdict {
			case gatePassed:
				m.Passes[pi].BatchBake, m.Passes[pi].Batch = nil, c.Batch+1
				return Action{}, true
			case gateFailed:
				m.Passes[pi].Failed = fmt.Sprintf("gate after %s: %s", st.Passes[pi].Batches[c.Batch].Name, m.Stages[m.Stage].Gate)
				return Action{}, true
			}
			if act.Kind == ActRead {
				return act, false
			}
			wait = earliest(wait, act)
			continue
		}
		ref := Ref{Kind: KindDeploy, Stage: m.Stage, Pass: pi, Batch: c.Batch}
		run, ok := in.Runs[ref]
		if !ok {
			return Action{Kind: ActDispatch, Ref: ref}, false
		}
		wait = earliest(wait, waitFor(run, in))
	}
	if allDone {
		m.Phase, m.Bake, m.Passes = PhaseBake, Bake{From: in.Now}, nil
		m.Stages[m.Stage].State = StageBaking
		return Action{}, true
	}
	return wait, false
}

// settlePass applies what is known of the pass's current batch run.
func (m *Machine) settlePass(in Inputs, st rollout.Stage, pi int) bool {
	c, pass := &m.Passes[pi], st.Passes[pi]
	if c.Done || c.Failed != "" || c.BatchBake != nil {
		return false
	}
	b := pass.Batches[c.Batch]
	run, ok := in.Runs[Ref{Kind: KindDeploy, Stage: m.Stage, Pass: pi, Batch: c.Batch}]
	switch {
	case !ok:
		return false
	case run.State == RunFailure:
		c.Failed = fmt.Sprintf("%s: workflow run %d failed%s", b.Name, run.RunID, suffix(run.Detail))
	case timedOut(run, in):
		c.Failed = fmt.Sprintf("%s: no runner for region %s", b.Name, pass.Region)
	case run.State != RunSuccess:
		return false
	case c.Batch == len(pass.Batches)-1:
		c.Done = true
	case st.BatchBake != nil:
		c.BatchBake = &Bake{From: in.Now}
	default:
		c.Batch++
	}
	return true
}

// bake is the stage's gate after its last batch.
func (m *Machine) bake(in Inputs, evs *[]Event) (Action, bool) {
	st := in.Plan.Stages[m.Stage]
	act, verdict := m.gate(in, &m.Bake, st.Bake, false, ReadRequest{Stage: m.Stage, Pass: -1, Batch: -1})
	switch verdict {
	case gateFailed:
		m.fail(in, m.Stage, m.Stages[m.Stage].Gate, evs)
		return Action{}, true
	case gatePending:
		return act, false
	}
	m.Stages[m.Stage].State = StageSucceeded
	for i := range st.Passes {
		*evs = append(*evs, Event{Type: "pass", Pass: &st.Passes[i], Outcome: "succeeded"})
	}
	*evs = append(*evs, Event{Type: "stage-succeeded", Message: "stage " + st.Name + " passed its gate"})
	if st.AwaitApproval && m.Stage < len(in.Plan.Stages)-1 {
		m.Status, m.Phase, m.ApprovalSince = PausedApproval, PhaseApproval, in.Now
		*evs = append(*evs, Event{Type: "paused-approval", Message: fmt.Sprintf("waiting for %d approval(s) after wave %s",
			in.Settings.ApprovalCount, st.Wave)})
		return Action{}, true
	}
	m.Stage++
	m.Phase = PhaseFreeze
	return Action{}, true
}

type gateVerdict int

const (
	gatePending gateVerdict = iota
	gatePassed
	gateFailed
)

// gate runs a bake of d: readings every health interval (the last one at
// the end), failing at failures_to_stop consecutive red ones and unless the
// last is green. Without anything to read it is a durable wait. It is the
// one judge of readings: a gate with checks passes only on a reading, and
// failures_to_stop is at least 1 even in a plan that left it 0 (a 0 would
// fail the stage before its first reading).
func (m *Machine) gate(in Inputs, b *Bake, d time.Duration, probesOnly bool, req ReadRequest) (Action, gateVerdict) {
	h := in.Plan.Health
	n := readings(h, d, probesOnly)
	end := b.From.Add(d)
	if n == 0 {
		if in.Now.Before(end) {
			return Action{Kind: ActWait, Until: end}, gatePending
		}
		return Action{}, gatePassed
	}
	if b.Red >= max(h.FailuresToStop, 1) {
		return Action{}, gateFailed
	}
	if b.Reads >= n && b.Red == 0 {
		return Action{}, gatePassed
	}
	next := b.Reads + 1
	due := readAt(b.From, h.Interval, d, next)
	if next > n && due.Before(b.Last.Add(h.Interval)) {
		// A red reading at or past the bake's end is read again an
		// interval after it was taken, not on the bake's schedule: one
		// taken late (after a long stop) would else be read again at
		// once, and failures_to_stop would count two looks at the same
		// moment as two readings.
		due = b.Last.Add(h.Interval)
	}
	if in.Now.Before(due) {
		return Action{Kind: ActWait, Until: due}, gatePending
	}
	// After a long stop, readings whose time has passed are not made up:
	// the one due last stands for them. Past the bake, a red last reading
	// is read again every interval until green or failures_to_stop.
	for next < n && !in.Now.Before(readAt(b.From, h.Interval, d, next+1)) {
		next++
	}
	req.N = next
	return Action{Kind: ActRead, Read: req}, gatePending
}

// readings is how many readings a bake of d takes: one per interval, the
// last at its end, at least one; none when nothing is read.
func readings(h *rollout.Health, d time.Duration, probesOnly bool) int {
	if h == nil || (probesOnly && !hasProbes(h)) {
		return 0
	}
	if d <= 0 || h.Interval <= 0 {
		return 1
	}
	return int((d + h.Interval - 1) / h.Interval)
}

// readAt is when the n-th reading of a bake of d from `from` is due: every
// interval, the last of the bake at its end, and any further one (a red
// last reading read again) an interval after the one before.
func readAt(from time.Time, interval, d time.Duration, n int) time.Time {
	if interval <= 0 {
		return from.Add(d)
	}
	inBake := time.Duration((d + interval - 1) / interval)
	if d <= 0 {
		inBake = 1
	}
	if k := time.Duration(n); k > inBake {
		return from.Add(d + (k-inBake)*interval)
	}
	return from.Add(min(time.Duration(n)*interval, d))
}

// Observe applies a reading the shell took for req, as of at.
func (m *Machine) Observe(req ReadRequest, at time.Time, green bool, reasons string) {
	b := &m.Bake
	if req.Pass >= 0 {
		if req.Pass >= len(m.Passes) || m.Passes[req.Pass].BatchBake == nil {
			return
		}
		b = m.Passes[req.Pass].BatchBake
	}
	b.Reads, b.Last = req.N, at
	if green {
		b.Red = 0
		return
	}
	b.Red++
	if m.Stage < len(m.Stages) {
		m.Stages[m.Stage].Gate = reasons
	}
}
