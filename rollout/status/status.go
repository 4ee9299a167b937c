// Package status holds the rollout's status as the seed shows it
// (`GET /api/v1/rollouts/{id}`, `ripcord rollout status`) and renders it for
// the ripcord/rollout check run: a table of stages and a Mermaid flowchart.
// It is pure; the executor fills a Status from its state.
package status

import (
	"fmt"

	"github.com/ripcord/ripcord/rollout"
)

// Deploy states of the top-level "state", in the seed's spelling.
const (
	StateRunning          = "RUNNING"
	StateAwaitingApproval = "AWAITING_APPROVAL"
	StateSuccess          = "SUCCESS"
	StateError            = "ERROR"
)

// RolloutStatus is rollout.status.
type RolloutStatus string

const (
	Running        RolloutStatus = "running"         // a stage, its bake or its gate
	PausedApproval RolloutStatus = "paused-approval" // waiting for approval after a wave
	PausedFreeze   RolloutStatus = "paused-freeze"   // waiting for a freeze to end (paused says which)
	// PausedQueue is not in the seed: a rollout waiting, before its first
	// stage, for an older rollout of the same app and environment to end
	// (paused says which).
	PausedQueue RolloutStatus = "paused-queue"
	// PausedHold is not in the seed: a rollout that was queued behind one
	// that failed after deploying, and waits before its first stage for a
	// person to start it (approve) or abort it (paused says why).
	PausedHold RolloutStatus = "paused-hold"
	Succeeded  RolloutStatus = "succeeded"
	Failed     RolloutStatus = "failed"
)

// StageState is stages[].state.
type StageState string

const (
	StagePending    StageState = "pending"
	StageRunning    StageState = "running"
	StageBaking     StageState = "baking"
	StageSucceeded  StageState = "succeeded"
	StageFailed     StageState = "failed"
	StageRolledBack StageState = "rolled-back"
)

// Status is the whole answer of GET /api/v1/rollouts/{id}.
type Status struct {
	State           string  `json:"state"`
	RolloutProgress string  `json:"rollout_progress"` // stages passed / stages
	Rollout         Rollout `json:"rollout"`
}

// Rollout is the "rollout" object of the status.
type Rollout struct {
	Status    RolloutStatus `json:"status"`
	Stage     string        `json:"stage,omitempty"` // the current, or the failed, stage
	OnFailure string        `json:"on_failure"`
	// Paused says what holds the rollout: the freeze (with its end), the
	// approval it waits for, or the older rollout it is queued behind.
	Paused   string    `json:"paused,omitempty"`
	Rollback *Rollback `json:"rollback,omitempty"`
	// Drift lists, once a rollout failed, the stages left on the new
	// version while others are not (seed 001: after a stop "the inventory
	// reports drift"): the environment runs two versions until it is
	// released again or rolled back.
	Drift  []string `json:"drift,omitempty"`
	Stages []Stage  `json:"stages"`
}

// Rollback reports the rollback on_failure started, and its outcome.
type Rollback struct {
	Status string   `json:"status"`           // running | succeeded | failed
	Stages []string `json:"stages,omitempty"` // in the order they are rolled back
	Reason string   `json:"reason,omitempty"`
}

// Stage is one entry of rollout.stages.
type Stage struct {
	Name  string     `json:"name"`
	Wave  string     `json:"wave"`
	State StageState `json:"state"`
	// Gate is the last red gate reading, e.g. "metric error-rate
	// (us-1/us-1a): value 0.2 above max 0.01".
	Gate string `json:"gate,omitempty"`
	// Approval is the state of the approval after this stage, for the last
	// stage of a wave in approvals_between: pending, approved, rejected or
	// expired ("" when none is asked).
	Approval string `json:"approval,omitempty"`
	Passes   []Pass `json:"passes"`
}

// Pass is one entry of stages[].passes.
type Pass struct {
	Name    string   `json:"name"`
	Region  string   `json:"region,omitempty"`
	AZ      string   `json:"az,omitempty"`
	Hosts   []string `json:"hosts"`
	Batches []Batch  `json:"batches,omitempty"`
}

// Batch is one batch of a pass: one run of the deploy workflow.
type Batch struct {
	Name  string   `json:"name"` // deploy@<pass>#<n>
	Hosts []string `json:"hosts"`
	State string   `json:"state,omitempty"`
	// Parallel is the effective parallelism; ParallelRequested is shown
	// only when it was reduced, as the seed asks.
	Parallel          int    `json:"parallel,omitempty"`
	ParallelRequested int    `json:"parallel_requested,omitempty"`
	RunURL            string `json:"run_url,omitempty"`
}

// New is the status of a plan not yet started: every stage pending.
func New(p *rollout.Plan) Status {
	s := Status{State: StateRunning, Rollout: Rollout{Status: Running, OnFailure: string(p.OnFailure)}}
	for _, st := range p.Stages {
		stage := Stage{Name: st.Name, Wave: st.Wave, State: StagePending, Passes: []Pass{}}
		if st.AwaitApproval {
			stage.Approval = "pending"
		}
		for _, pa := range st.Passes {
			pass := Pass{Name: pa.Name, Region: pa.Region, AZ: pa.AZ, Hosts: pa.Hosts}
			for _, b := range pa.Batches {
				batch := Batch{Name: b.Name, Hosts: b.Hosts, State: string(StagePending), Parallel: b.Parallel}
				if b.ParallelRequested != b.Parallel {
					batch.ParallelRequested = b.ParallelRequested
				}
				pass.Batches = append(pass.Batches, batch)
			}
			stage.Passes = append(stage.Passes, pass)
		}
		s.Rollout.Stages = append(s.Rollout.Stages, stage)
	}
	if len(s.Rollout.Stages) > 0 {
		s.Rollout.Stage = s.Rollout.Stages[0].Name
	}
	s.RolloutProgress = Progress(s.Rollout.Stages)
	return s
}

// DriftOf lists the stages a failed rollout leaves on the new version:
// those that passed and were not rolled back, and a failed stage that was
// left as it was (stop), with some batch dispatched. None when every stage
// is on one side.
func DriftOf(stages []Stage) []string {
	var onNew []string
	for _, st := range stages {
		switch {
		case st.State == StageSucceeded:
			onNew = append(onNew, st.Name)
		case st.State == StageFailed && deployedAny(st):
			onNew = append(onNew, st.Name+" (partly)")
		}
	}
	if len(onNew) == 0 || len(onNew) == len(stages) {
		return nil
	}
	return onNew
}

func deployedAny(st Stage) bool {
	for _, p := range st.Passes {
		for _, b := range p.Batches {
			if b.State != "" && b.State != string(StagePending) {
				return true
			}
		}
	}
	return false
}

// Progress is rollout_progress: stages succeeded over all stages, "2/4".
func Progress(stages []Stage) string {
	done := 0
	for _, s := range stages {
		if s.State == StageSucceeded {
			done++
		}
	}
	return fmt.Sprintf("%d/%d", done, len(stages))
}
