package rolloutflow

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

// twoStages is a plan of two stages of one batch each, baking 1m with a
// reading every 30s; failures_to_stop 2.
func twoStages(onFailure rollout.OnFailure) *rollout.Plan {
	stage := func(name, region string) rollout.Stage {
		return rollout.Stage{Name: name, Wave: name, Bake: time.Minute, Passes: []rollout.Pass{{Name: name, Region: region,
			Hosts: []string{name + "-1"}, Batches: []rollout.Batch{{Name: "deploy@" + name + "#0", Hosts: []string{name + "-1"}, Parallel: 1}}}}}
	}
	return &rollout.Plan{Stages: []rollout.Stage{stage("a", "eu-1"), stage("b", "us-1")}, OnFailure: onFailure,
		Health: &rollout.Health{Interval: 30 * time.Second, FailuresToStop: 2}}
}

func inputs(p *rollout.Plan, now time.Time, runs map[Ref]Run) Inputs {
	return Inputs{Now: now, Plan: p, Runs: runs, HasPrevious: true,
		Settings: Settings{QueueTimeout: 10 * time.Minute, ApprovalCount: 1, ApprovalExpiry: time.Hour}}
}

var deployA = Ref{Kind: KindDeploy, Stage: 0, Pass: 0, Batch: 0}

// baking is a machine whose stage a deployed at t0 and now bakes.
func baking(p *rollout.Plan) Machine {
	m := NewMachine(p)
	m.Phase, m.Bake = PhaseBake, Bake{From: t0}
	m.Stages[0].State = StageBaking
	return m
}

func TestBakeTransitions(t *testing.T) {
	t.Parallel()
	p := twoStages(rollout.Stop)
	runs := map[Ref]Run{deployA: {State: RunSuccess}}
	t.Run("a reading is due every interval", func(t *testing.T) {
		m := baking(p)
		act, _ := m.Next(inputs(p, t0, runs))
		if act.Kind != ActWait || !act.Until.Equal(t0.Add(30*time.Second)) {
			t.Fatalf("action %+v, want a wait until the first reading", act)
		}
		act, _ = m.Next(inputs(p, t0.Add(30*time.Second), runs))
		if act.Kind != ActRead || act.Read.N != 1 || act.Read.Pass != -1 {
			t.Fatalf("action %+v, want the first reading of the stage gate", act)
		}
	})
	t.Run("readings overdue after a long stop are not made up", func(t *testing.T) {
		m := baking(p)
		act, _ := m.Next(inputs(p, t0.Add(5*time.Minute), runs))
		if act.Kind != ActRead || act.Read.N != 2 {
			t.Fatalf("action %+v, want one reading standing for the bake's last (2)", act)
		}
	})
	t.Run("a red last reading is read again, not failed at once", func(t *testing.T) {
		m := baking(p)
		m.Observe(ReadRequest{Pass: -1, Batch: -1, N: 1}, t0.Add(30*time.Second), true, "")
		m.Observe(ReadRequest{Pass: -1, Batch: -1, N: 2}, t0.Add(time.Minute), false, "metric x red")
		act, _ := m.Next(inputs(p, t0.Add(time.Minute), runs))
		if act.Kind != ActWait || !act.Until.Equal(t0.Add(90*time.Second)) || m.Stages[0].State != StageBaking {
			t.Fatalf("action %+v state %s, want another reading at 1m30s", act, m.Stages[0].State)
		}
		m.Observe(ReadRequest{Pass: -1, Batch: -1, N: 3}, t0.Add(90*time.Second), true, "")
		act, _ = m.Next(inputs(p, t0.Add(90*time.Second), runs))
		if m.Stages[0].State != StageSucceeded || act.Kind != ActDispatch || act.Ref.Stage != 1 {
			t.Fatalf("state %s action %+v, want a passed then the next stage dispatched", m.Stages[0].State, act)
		}
	})
	t.Run("failures_to_stop red readings fail before the bake is over", func(t *testing.T) {
		m := baking(p)
		m.Observe(ReadRequest{Pass: -1, Batch: -1, N: 1}, t0.Add(30*time.Second), false, "metric x red")
		m.Observe(ReadRequest{Pass: -1, Batch: -1, N: 2}, t0.Add(time.Minute), false, "metric x red")
		act, _ := m.Next(inputs(p, t0.Add(time.Minute), runs))
		if act.Kind != ActDone || m.Status != Failed || m.Stages[0].Gate != "metric x red" {
			t.Fatalf("action %+v status %s gate %q", act, m.Status, m.Stages[0].Gate)
		}
	})
}

// Seed 001: at the end of the bake the last reading must be green. A red
// reading taken before the bake's end is never the last word: the stage
// neither passes on it nor fails on it alone, but is read again at the end
// (or, after a long stop, once, as of then) and judged on that reading.
func TestARedReadingBeforeTheBakesEndIsReadAgainAtTheEnd(t *testing.T) {
	t.Parallel()
	p := twoStages(rollout.Stop)
	p.Health.FailuresToStop = 3
	runs := map[Ref]Run{deployA: {State: RunSuccess}}
	redBeforeTheEnd := func() Machine {
		m := baking(p)
		m.Observe(ReadRequest{Pass: -1, Batch: -1, N: 1}, t0.Add(30*time.Second), false, "metric x red")
		return m
	}
	t.Run("not passed on it: the end is read", func(t *testing.T) {
		m := redBeforeTheEnd()
		act, _ := m.Next(inputs(p, t0.Add(59*time.Second), runs))
		if act.Kind != ActWait || !act.Until.Equal(t0.Add(time.Minute)) || m.Stages[0].State != StageBaking {
			t.Fatalf("action %+v state %s, want a wait for the reading at the bake's end", act, m.Stages[0].State)
		}
		act, _ = m.Next(inputs(p, t0.Add(time.Minute), runs))
		if act.Kind != ActRead || act.Read.N != 2 || m.Stages[0].State != StageBaking {
			t.Fatalf("action %+v state %s, want reading 2 at the bake's end", act, m.Stages[0].State)
		}
		m.Observe(act.Read, t0.Add(time.Minute), true, "")
		act, _ = m.Next(inputs(p, t0.Add(time.Minute), runs))
		if m.Stages[0].State != StageSucceeded || act.Kind != ActDispatch || act.Ref.Stage != 1 {
			t.Fatalf("state %s action %+v, want passed on the green reading at the end", m.Stages[0].State, act)
		}
	})
	t.Run("after a long stop one reading as of then decides", func(t *testing.T) {
		for _, green := range []bool{true, false} {
			m := redBeforeTheEnd()
			late := t0.Add(10 * time.Minute)
			act, _ := m.Next(inputs(p, late, runs))
			if act.Kind != ActRead || act.Read.N != 2 || m.Stages[0].State != StageBaking {
				t.Fatalf("action %+v state %s, want one reading (2) taken now, not a verdict on the one before the stop", act, m.Stages[0].State)
			}
			m.Observe(act.Read, late, green, "metric x red")
			act, _ = m.Next(inputs(p, late, runs))
			switch {
			case green && (m.Stages[0].State != StageSucceeded || act.Kind != ActDispatch):
				t.Errorf("green now: state %s action %+v, want passed", m.Stages[0].State, act)
			case !green && (m.Stages[0].State != StageBaking || act.Kind != ActWait || !act.Until.Equal(late.Add(30*time.Second))):
				// Two reds of three: read on, an interval later.
				t.Errorf("red now: state %s action %+v, want another reading at %s", m.Stages[0].State, act, late.Add(30*time.Second))
			}
		}
	})
}

func TestFreezeTransitions(t *testing.T) {
	t.Parallel()
	p := twoStages(rollout.Stop)
	end := t0.Add(time.Hour)
	in := inputs(p, t0, nil)
	in.Freeze = func(regions []string, now time.Time) (string, time.Time, bool) {
		return "freeze us", end, now.Before(end) && len(regions) == 1 && regions[0] == "eu-1"
	}
	m := NewMachine(p)
	act, evs := m.Next(in)
	if m.Status != PausedFreeze || act.Kind != ActWait || !act.Until.Equal(end) || len(evs) == 0 {
		t.Fatalf("status %s action %+v, want paused-freeze until %s", m.Status, act, end)
	}
	again, evs := m.Next(in)
	if again != act || len(evs) != 0 {
		t.Errorf("a second tick in the window changed something: %+v %v", again, evs)
	}
	in.Now = end
	act, _ = m.Next(in)
	if m.Status != Running || act.Kind != ActDispatch || act.Ref != deployA {
		t.Fatalf("status %s action %+v, want the stage started when the window ends", m.Status, act)
	}
}

// An abort while the rollout waits for the approval after stage a stops
// stage b, which the approval holds back; a passed its gate, so only
// rollback-all takes it back.
func TestAbortDuringTheApprovalAppliesOnFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		onFailure rollout.OnFailure
		kind      ActionKind
		stageA    string
	}{
		{rollout.RollbackWave, ActDone, StageSucceeded},
		{rollout.RollbackAll, ActDispatch, StageSucceeded},
	} {
		t.Run(string(tc.onFailure), func(t *testing.T) {
			p := twoStages(tc.onFailure)
			p.Stages[0].AwaitApproval = true
			m := NewMachine(p)
			m.Phase, m.Status, m.ApprovalSince = PhaseApproval, PausedApproval, t0
			m.Stages[0].State = StageSucceeded
			in := inputs(p, t0, map[Ref]Run{deployA: {State: RunSuccess}})
			in.AbortBy, in.AbortReason = "bob", "pager"
			act, evs := m.Next(in)
			if m.Status != Failed || act.Kind != tc.kind || (tc.kind == ActDispatch && act.Ref != (Ref{Kind: KindRollback})) {
				t.Fatalf("status %s action %+v, want failed and action %v", m.Status, act, tc.kind)
			}
			if m.Stage != 1 || m.Stages[0].State != tc.stageA || m.Stages[1].State != StageFailed || m.Stages[0].Approval != "pending" {
				t.Errorf("stage %d states %+v, want b failed, a %s with its approval pending", m.Stage, m.Stages, tc.stageA)
			}
			if !strings.Contains(m.Failure, "stage b: aborted by @bob: pager") {
				t.Errorf("failure %q", m.Failure)
			}
			for _, e := range evs {
				if e.Pass != nil {
					t.Errorf("event %+v: no pass concluded", e)
				}
			}
		})
	}
}

func TestAFailedRollbackRunEndsTheRollback(t *testing.T) {
	t.Parallel()
	p := twoStages(rollout.RollbackAll)
	m := NewMachine(p)
	m.Phase, m.Stage = PhaseDeploy, 1
	m.Stages[0].State, m.Stages[1].State = StageSucceeded, StageRunning
	m.Passes = make([]PassCursor, 1)
	deployB := Ref{Kind: KindDeploy, Stage: 1}
	runs := map[Ref]Run{deployA: {State: RunSuccess}, deployB: {State: RunFailure, RunID: 9},
		{Kind: KindRollback, Stage: 1}: {State: RunFailure, RunID: 10}}
	act, _ := m.Next(inputs(p, t0, runs))
	if act.Kind != ActDone || m.Rollback == nil || m.Rollback.Outcome != "failed" || m.Rollback.Next != 0 {
		t.Fatalf("action %+v rollback %+v, want the rollback failed before stage a", act, m.Rollback)
	}
	if m.Stages[0].State != StageSucceeded {
		t.Errorf("stage a %s: a rollback that failed on b must not touch a", m.Stages[0].State)
	}
}

func TestNoPreviousReleaseMeansNoRollbackDispatch(t *testing.T) {
	t.Parallel()
	p := twoStages(rollout.RollbackWave)
	m := NewMachine(p)
	m.Phase = PhaseDeploy
	m.Stages[0].State = StageRunning
	m.Passes = make([]PassCursor, 1)
	in := inputs(p, t0, map[Ref]Run{deployA: {State: RunFailure}})
	in.HasPrevious = false
	act, _ := m.Next(in)
	if act.Kind != ActDone || m.Rollback == nil || m.Rollback.Outcome != "failed" {
		t.Fatalf("action %+v rollback %+v", act, m.Rollback)
	}
}

func TestPassesOfAStageRunSideBySide(t *testing.T) {
	t.Parallel()
	p := twoStages(rollout.Stop)
	second := p.Stages[1].Passes[0]
	p.Stages[0].Passes = append(p.Stages[0].Passes, second)
	m := NewMachine(p)
	runs := map[Ref]Run{}
	act, _ := m.Next(inputs(p, t0, runs))
	if act.Kind != ActDispatch || act.Ref != deployA {
		t.Fatalf("action %+v, want the first pass dispatched", act)
	}
	runs[deployA] = Run{State: RunQueued, RunID: 1, DispatchedAt: t0}
	act, _ = m.Next(inputs(p, t0, runs))
	if act.Kind != ActDispatch || act.Ref != (Ref{Kind: KindDeploy, Stage: 0, Pass: 1}) {
		t.Fatalf("action %+v, want the second pass dispatched while the first runs", act)
	}
	runs[act.Ref] = Run{State: RunFailure, RunID: 2, DispatchedAt: t0}
	act, _ = m.Next(inputs(p, t0, runs))
	if m.Status != Failed || m.Stages[0].State != StageFailed || !strings.Contains(m.Failure, "workflow run 2 failed") {
		t.Fatalf("status %s stage %s failure %q: a failed pass fails its stage at once", m.Status, m.Stages[0].State, m.Failure)
	}
	// The first pass's batch, waiting for a runner, may still deploy: the
	// rollout ends when it has (or its queue_timeout passed).
	if act.Kind != ActWait || !act.Until.Equal(t0.Add(10*time.Minute)) || m.Phase != PhaseDrain {
		t.Fatalf("action %+v phase %s, want a wait for the first pass's batch", act, m.Phase)
	}
}

func TestQueueTransitions(t *testing.T) {
	t.Parallel()
	p := twoStages(rollout.Stop)
	const ahead = "rollout ro-1 of release r1"
	t.Run("an older rollout not ended holds the new one before it deploys", func(t *testing.T) {
		m := NewMachine(p)
		in := inputs(p, t0, nil)
		in.Ahead = ahead
		act, evs := m.Next(in)
		if act.Kind != ActWait || !act.Until.Equal(t0.Add(queuePoll)) {
			t.Fatalf("action %+v, want a wait, looked at again after %s", act, queuePoll)
		}
		if m.Status != PausedQueue || m.Paused != ahead || m.Phase != PhaseQueue {
			t.Fatalf("machine %s/%s paused %q, want paused-queue behind %q", m.Status, m.Phase, m.Paused, ahead)
		}
		if len(evs) != 1 || evs[0].Type != "paused-queue" || !strings.Contains(evs[0].Message, ahead) {
			t.Fatalf("events %+v, want one paused-queue naming the rollout ahead", evs)
		}
		if _, evs = m.Next(in); len(evs) != 0 {
			t.Errorf("a second look at the same rollout ahead gave events %+v", evs)
		}
	})
	t.Run("the end of the rollout ahead starts the first stage", func(t *testing.T) {
		m := NewMachine(p)
		in := inputs(p, t0, nil)
		in.Ahead = ahead
		m.Next(in)
		in.Ahead = ""
		act, evs := m.Next(in)
		if act.Kind != ActDispatch || act.Ref != deployA {
			t.Fatalf("action %+v, want the dispatch of stage a", act)
		}
		if m.Status != Running || m.Paused != "" {
			t.Errorf("machine %s paused %q, want running", m.Status, m.Paused)
		}
		if len(evs) < 1 || evs[0].Type != "resumed" || !strings.Contains(evs[0].Message, ahead) {
			t.Errorf("events %+v, want resumed first, naming the rollout that ended", evs)
		}
	})
	t.Run("with nothing ahead a rollout starts at once, without a queue event", func(t *testing.T) {
		m := NewMachine(p)
		act, evs := m.Next(inputs(p, t0, nil))
		if act.Kind != ActDispatch || m.Status != Running {
			t.Fatalf("action %+v, status %s, want the dispatch of stage a", act, m.Status)
		}
		for _, e := range evs {
			if e.Type == "paused-queue" || e.Type == "resumed" {
				t.Errorf("event %+v for a rollout that never waited", e)
			}
		}
	})
	const hold = "rollout ro-1 of release r1, ahead of it, failed after deploying"
	t.Run("a hold keeps the rollout from starting when nothing is ahead", func(t *testing.T) {
		m := NewMachine(p)
		in := inputs(p, t0, nil)
		in.Hold = hold
		act, evs := m.Next(in)
		if act.Kind != ActWait || !act.Until.IsZero() {
			t.Fatalf("action %+v, want a wait for the vote that lifts the hold (no timer)", act)
		}
		if m.Status != PausedHold || m.Paused != hold || m.Phase != PhaseQueue {
			t.Fatalf("machine %s/%s paused %q, want paused-hold saying why", m.Status, m.Phase, m.Paused)
		}
		if len(evs) != 1 || evs[0].Type != "paused-hold" || !strings.Contains(evs[0].Message, "approve to start it, or abort it") {
			t.Fatalf("events %+v, want one paused-hold saying what to do", evs)
		}
		if _, evs = m.Next(in); len(evs) != 0 {
			t.Errorf("a second look at the same hold gave events %+v", evs)
		}
	})
	t.Run("a hold shows before the queue, and once lifted the queue still holds", func(t *testing.T) {
		m := NewMachine(p)
		in := inputs(p, t0, nil)
		in.Hold, in.Ahead = hold, ahead
		m.Next(in)
		if m.Status != PausedHold {
			t.Fatalf("held and queued: %s, want paused-hold", m.Status)
		}
		in.Hold = ""
		act, evs := m.Next(in)
		if act.Kind != ActWait || m.Status != PausedQueue || m.Paused != ahead {
			t.Fatalf("action %+v, machine %s paused %q; want paused-queue behind %q", act, m.Status, m.Paused, ahead)
		}
		if len(evs) != 2 || evs[0].Type != "resumed" || evs[0].Message != "the hold is lifted" || evs[1].Type != "paused-queue" {
			t.Errorf("events %+v, want the hold lifted, then queued", evs)
		}
		in.Ahead = ""
		if act, _ := m.Next(in); act.Kind != ActDispatch || act.Ref != deployA {
			t.Errorf("action %+v once nothing is ahead, want the dispatch of stage a", act)
		}
	})
	t.Run("an abort while held ends it without on_failure", func(t *testing.T) {
		m := NewMachine(twoStages(rollout.RollbackAll))
		in := inputs(p, t0, nil)
		in.Plan, in.Hold = twoStages(rollout.RollbackAll), hold
		m.Next(in)
		in.AbortBy, in.AbortReason = "bob", "it has the same fault"
		if act, _ := m.Next(in); act.Kind != ActDone || m.Status != Failed || m.Rollback != nil || m.Paused != "" {
			t.Fatalf("action %+v, machine %s rollback %+v paused %q, want failed with no rollback", act, m.Status, m.Rollback, m.Paused)
		}
	})
	t.Run("an abort while queued ends it without on_failure", func(t *testing.T) {
		m := NewMachine(twoStages(rollout.RollbackAll))
		in := inputs(p, t0, nil)
		in.Plan, in.Ahead = twoStages(rollout.RollbackAll), ahead
		m.Next(in)
		in.AbortBy, in.AbortReason = "bob", "v2 supersedes it"
		act, _ := m.Next(in)
		if act.Kind != ActDone || m.Status != Failed || m.Rollback != nil || m.Paused != "" {
			t.Fatalf("action %+v, machine %s rollback %+v paused %q, want failed with no rollback", act, m.Status, m.Rollback, m.Paused)
		}
		if !strings.Contains(m.Failure, "aborted by @bob before it started: v2 supersedes it") {
			t.Errorf("failure %q", m.Failure)
		}
	})
}

// deployingStage is a machine deploying the first stage of two, which has
// two passes side by side: deployA (pass 0) and sibling (pass 1).
func deployingStage(onFailure rollout.OnFailure) (*rollout.Plan, Machine) {
	p := twoStages(onFailure)
	p.Stages[0].Passes = append(p.Stages[0].Passes, p.Stages[1].Passes[0])
	m := NewMachine(p)
	m.Phase = PhaseDeploy
	m.Stages[0].State = StageRunning
	m.Passes = make([]PassCursor, 2)
	return p, m
}

// sibling is the deploy batch of deployingStage's second pass.
var sibling = Ref{Kind: KindDeploy, Stage: 0, Pass: 1}

func TestARollbackWaitsForTheSiblingPassStillDeploying(t *testing.T) {
	t.Parallel()
	p, m := deployingStage(rollout.RollbackWave)
	runs := map[Ref]Run{deployA: {State: RunFailure, RunID: 1, DispatchedAt: t0},
		sibling: {State: RunInProgress, RunID: 2, DispatchedAt: t0}}
	act, _ := m.Next(inputs(p, t0, runs))
	if act.Kind != ActDispatch || act.Ref != (Ref{Kind: KindRollback}) {
		t.Fatalf("action %+v, want the failed pass's batch rolled back", act)
	}
	runs[act.Ref] = Run{State: RunSuccess, RunID: 3, DispatchedAt: t0}
	act, _ = m.Next(inputs(p, t0.Add(time.Minute), runs))
	if act.Kind == ActDispatch {
		t.Fatalf("action %+v: the sibling's batch is rolled back while its deploy run %d still runs on the same hosts", act, runs[sibling].RunID)
	}
	if act.Kind != ActWait {
		t.Fatalf("action %+v, want a wait for the sibling's deploy run to end", act)
	}
	runs[sibling] = Run{State: RunSuccess, RunID: 2, DispatchedAt: t0}
	act, _ = m.Next(inputs(p, t0.Add(2*time.Minute), runs))
	if act.Kind != ActDispatch || act.Ref != (Ref{Kind: KindRollback, Stage: 0, Pass: 1}) {
		t.Fatalf("action %+v, want the sibling's batch rolled back once its deploy ended", act)
	}
}

// on_failure stop, or a rollback that cannot run, ends the rollout only
// once a sibling pass's batch still deploying has ended: until then the
// rollouts queued behind it wait, as they would for its rollback.
func TestAStoppedRolloutEndsOnlyOnceTheSiblingPassStopsDeploying(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		onFailure rollout.OnFailure
		previous  bool
		sibling   Run
		until     time.Time // the wait while the sibling's batch runs
	}{
		{"stop, the sibling's run in progress", rollout.Stop, true, Run{State: RunInProgress, RunID: 2, DispatchedAt: t0}, time.Time{}},
		{"stop, the sibling's run waiting for a runner", rollout.Stop, true, Run{State: RunQueued, RunID: 2, DispatchedAt: t0}, t0.Add(10 * time.Minute)},
		{"rollback-wave without a previous release", rollout.RollbackWave, false, Run{State: RunInProgress, RunID: 2, DispatchedAt: t0}, time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, m := deployingStage(c.onFailure)
			runs := map[Ref]Run{deployA: {State: RunFailure, RunID: 1, DispatchedAt: t0}, sibling: c.sibling}
			in := inputs(p, t0.Add(time.Minute), runs)
			in.HasPrevious = c.previous
			act, evs := m.Next(in)
			if m.Phase == PhaseDone || act.Kind == ActDone {
				t.Fatalf("the rollout ended (%+v) while run %d of the sibling pass still deploys", act, c.sibling.RunID)
			}
			if act.Kind != ActWait || !act.Until.Equal(c.until) {
				t.Fatalf("action %+v, want a wait for the sibling's run (until %v)", act, c.until)
			}
			if m.Status != Failed || !strings.Contains(m.Failure, "workflow run 1 failed") {
				t.Errorf("status %s failure %q, want failed for pass a's run", m.Status, m.Failure)
			}
			if !strings.Contains(m.Paused, "deploy@b#0") {
				t.Errorf("paused %q, want it to name the batch in flight", m.Paused)
			}
			if e := evs[len(evs)-1]; e.Type != "waiting-batches" || !strings.Contains(e.Message, "deploy@b#0") {
				t.Errorf("last event %+v, want one saying the rollout waits for deploy@b#0", e)
			}
			if act, evs = m.Next(in); act.Kind != ActWait || len(evs) != 0 {
				t.Errorf("a second look: action %+v events %+v, want the same wait and nothing new", act, evs)
			}

			runs[sibling] = Run{State: RunSuccess, RunID: 2, DispatchedAt: t0}
			act, evs = m.Next(inputs(p, t0.Add(2*time.Minute), runs))
			if act.Kind != ActDone || m.Phase != PhaseDone || m.Status != Failed || m.Paused != "" {
				t.Fatalf("action %+v, machine %s/%s paused %q once the sibling's run ended; want done, failed", act, m.Status, m.Phase, m.Paused)
			}
			if len(evs) != 1 || evs[0].Type != "batches-ended" {
				t.Errorf("events %+v, want one saying the batches in flight have ended", evs)
			}
		})
	}
	t.Run("a failed rollback waits too", func(t *testing.T) {
		p, m := deployingStage(rollout.RollbackWave)
		runs := map[Ref]Run{deployA: {State: RunFailure, RunID: 1, DispatchedAt: t0},
			sibling: {State: RunInProgress, RunID: 2, DispatchedAt: t0}}
		act, _ := m.Next(inputs(p, t0, runs))
		if act.Kind != ActDispatch || act.Ref != (Ref{Kind: KindRollback}) {
			t.Fatalf("action %+v, want the failed pass's batch rolled back", act)
		}
		runs[act.Ref] = Run{State: RunFailure, RunID: 3, DispatchedAt: t0}
		act, _ = m.Next(inputs(p, t0.Add(time.Minute), runs))
		if act.Kind != ActWait || m.Phase != PhaseDrain || m.Rollback.Outcome != "failed" {
			t.Fatalf("action %+v phase %s rollback %+v, want the failed rollback waiting for the sibling's run", act, m.Phase, m.Rollback)
		}
	})
	t.Run("a sibling's batch past its queue_timeout is not waited for", func(t *testing.T) {
		p, m := deployingStage(rollout.Stop)
		runs := map[Ref]Run{deployA: {State: RunFailure, RunID: 1, DispatchedAt: t0},
			sibling: {State: RunQueued, RunID: 2, DispatchedAt: t0.Add(-time.Hour)}}
		if act, _ := m.Next(inputs(p, t0, runs)); act.Kind != ActDone || m.Phase != PhaseDone {
			t.Fatalf("action %+v phase %s, want the rollout ended", act, m.Phase)
		}
	})
}

// rollback-all undoes the deploy in reverse (seed 001: the stages already
// passed go back "in ordine inverso"): the failed stage first, then the
// passed stages newest first, and inside each pass its batches newest
// first, the reverse of the order the pass deployed them. The passes of
// a stage, deployed side by side, keep the plan's order.
func TestRollbackAllUndoesTheBatchesInReverse(t *testing.T) {
	t.Parallel()
	p := twoStages(rollout.RollbackAll)
	batches := func(pass string, n int) []rollout.Batch {
		var out []rollout.Batch
		for i := range n {
			out = append(out, rollout.Batch{Name: fmt.Sprintf("deploy@%s#%d", pass, i), Hosts: []string{pass}, Parallel: 1})
		}
		return out
	}
	p.Stages[0].Passes = []rollout.Pass{
		{Name: "a/eu-1", Region: "eu-1", Batches: batches("a/eu-1", 2)},
		{Name: "a/us-1", Region: "us-1", Batches: batches("a/us-1", 2)},
	}
	p.Stages[1].Passes[0].Batches = batches("b", 2)
	m := NewMachine(p)
	m.Phase, m.Stage = PhaseDeploy, 1
	m.Stages[0].State, m.Stages[1].State = StageSucceeded, StageRunning
	m.Passes = []PassCursor{{Batch: 1}}
	runs := map[Ref]Run{}
	for pi := range 2 {
		for bi := range 2 {
			runs[Ref{Kind: KindDeploy, Stage: 0, Pass: pi, Batch: bi}] = Run{State: RunSuccess}
		}
	}
	runs[Ref{Kind: KindDeploy, Stage: 1, Batch: 0}] = Run{State: RunSuccess}
	runs[Ref{Kind: KindDeploy, Stage: 1, Batch: 1}] = Run{State: RunFailure, RunID: 7}
	m.Next(inputs(p, t0, runs))
	if m.Rollback == nil {
		t.Fatalf("status %s phase %s: no rollback", m.Status, m.Phase)
	}
	var got []string
	for _, ref := range m.Rollback.Queue {
		got = append(got, p.Stages[ref.Stage].Passes[ref.Pass].Batches[ref.Batch].Name)
	}
	want := []string{"deploy@b#1", "deploy@b#0", "deploy@a/eu-1#1", "deploy@a/eu-1#0", "deploy@a/us-1#1", "deploy@a/us-1#0"}
	if !slices.Equal(got, want) {
		t.Errorf("rolled back in the order %v, want %v", got, want)
	}
}
