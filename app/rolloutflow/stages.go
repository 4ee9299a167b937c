package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/rollout/status"
)

// RolloutView is a release's rollout as the release page shows it: the
// status JSON of GET /api/v1/rollouts/{id} (statusOf), cut down to what a
// person reads, with when each stage started and finished.
type RolloutView struct {
	ID string
	// Status is rollout.status: running, paused-approval, paused-freeze,
	// paused-queue, paused-hold, succeeded or failed.
	Status status.RolloutStatus
	// State is the seed's top-level state: RUNNING, AWAITING_APPROVAL,
	// SUCCESS or ERROR.
	State     string
	Progress  string // rollout_progress: stages passed / stages, "1/3"
	Stage     string // the current, or the failed, stage
	Paused    string // what holds the rollout: the freeze, the approval, the rollout ahead or a suspension
	OnFailure string
	Rollback  *status.Rollback // nil until on_failure starts a rollback
	// Drift lists the stages a failed rollout left on the new version.
	Drift     []string
	Stages    []StageView
	UpdatedAt time.Time
}

// StageView is one entry of rollout.stages.
type StageView struct {
	Name  string
	Wave  string
	State status.StageState // pending, running, baking, succeeded, failed, rolled-back
	// Gate is the stage's last red gate reading, "" while it is green.
	Gate string
	// Approval is the approval after the stage ("" when none is asked):
	// pending, approved, rejected or expired.
	Approval string
	Passes   []PassView
	// StartedAt is when the stage's first batch was dispatched, FinishedAt
	// when it passed its gate; zero when that has not happened.
	StartedAt  time.Time
	FinishedAt time.Time
}

// PassView is one pass of a stage: its name (region or AZ), how many hosts
// it updates, and how many of its batches' runs succeeded.
type PassView struct {
	Name             string
	Hosts            int
	Batches          int
	BatchesSucceeded int
}

// Stages reads the rollout of a release; ok is false when the release has
// none. db is only read.
func Stages(ctx context.Context, db *sql.DB, releaseID string) (RolloutView, bool, error) {
	r, err := rolloutOfRelease(ctx, db, releaseID)
	if errors.Is(err, ErrNotFound) {
		return RolloutView{}, false, nil
	}
	if err != nil {
		return RolloutView{}, false, fmt.Errorf("rollout of release %s: %w", releaseID, err)
	}
	runs, err := listDispatched(ctx, db, r.ID)
	if err != nil {
		return RolloutView{}, false, err
	}
	times, err := loadRuns(ctx, db, r.ID)
	if err != nil {
		return RolloutView{}, false, err
	}
	audit, err := listAudit(ctx, db, r.ID)
	if err != nil {
		return RolloutView{}, false, err
	}
	st := statusOf(r, runs, nil)
	if err := pausedBySuspension(ctx, db, []*StatusJSON{&st}); err != nil {
		return RolloutView{}, false, err
	}
	return viewOf(st, times, audit), true, nil
}

// viewOf lays out a status for the page. Start times come from the
// batches' dispatches; a stage's end is its "passed its gate" audit line.
func viewOf(st StatusJSON, runs map[Ref]Run, audit []AuditLine) RolloutView {
	ro := st.Rollout
	v := RolloutView{ID: st.ID, Status: ro.Status, State: st.State, Progress: st.RolloutProgress, Stage: ro.Stage,
		Paused: ro.Paused, OnFailure: ro.OnFailure, Rollback: ro.Rollback, Drift: ro.Drift, UpdatedAt: st.UpdatedAt}
	for si, s := range ro.Stages {
		sv := StageView{Name: s.Name, Wave: s.Wave, State: s.State, Gate: s.Gate, Approval: s.Approval}
		for pi, p := range s.Passes {
			pv := PassView{Name: p.Name, Hosts: len(p.Hosts), Batches: len(p.Batches)}
			for bi, b := range p.Batches {
				if b.State == RunSuccess {
					pv.BatchesSucceeded++
				}
				run, ok := runs[Ref{Kind: KindDeploy, Stage: si, Pass: pi, Batch: bi}]
				if ok && !run.DispatchedAt.IsZero() && (sv.StartedAt.IsZero() || run.DispatchedAt.Before(sv.StartedAt)) {
					sv.StartedAt = run.DispatchedAt
				}
			}
			sv.Passes = append(sv.Passes, pv)
		}
		sv.FinishedAt = passedAt(audit, s.Name)
		v.Stages = append(v.Stages, sv)
	}
	return v
}

// passedAt is when the stage named name last passed its gate, or zero.
func passedAt(audit []AuditLine, name string) time.Time {
	var at time.Time
	for _, l := range audit {
		if l.Type == "stage-succeeded" && l.Message == "stage "+name+" passed its gate" {
			at = l.At
		}
	}
	return at
}
