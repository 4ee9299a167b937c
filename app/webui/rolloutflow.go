package webui

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/rolloutflow"
)

// RolloutFlow reads the releases' rollouts from the wave executor
// (app/rolloutflow), for RegisterWith.
func RolloutFlow(d pipeline.Deps) Rollouts {
	if d.DB == nil {
		return nil
	}
	return waveRollouts{db: d.DB.Read}
}

type waveRollouts struct{ db *sql.DB }

func (w waveRollouts) Rollout(ctx context.Context, releaseID string) (Rollout, bool, error) {
	v, ok, err := rolloutflow.Stages(ctx, w.db, releaseID)
	if err != nil || !ok {
		return Rollout{}, false, err
	}
	return fromWaves(v), true, nil
}

func (w waveRollouts) Deployed(ctx context.Context, releaseIDs []string) (map[string]string, error) {
	d, err := rolloutflow.Deployed(ctx, w.db, releaseIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(d))
	for id, st := range d {
		out[id] = string(st)
	}
	return out, nil
}

// fromWaves is the executor's view of a rollout as the page shows it.
func fromWaves(v rolloutflow.RolloutView) Rollout {
	out := Rollout{ID: v.ID, Status: string(v.Status), Progress: v.Progress, Stage: v.Stage, Paused: v.Paused,
		OnFailure: v.OnFailure, Drift: v.Drift}
	if rb := v.Rollback; rb != nil {
		out.Rollback = "rollback " + rb.Status
		if len(rb.Stages) > 0 {
			out.Rollback += ": " + strings.Join(rb.Stages, ", ")
		}
		if rb.Reason != "" {
			out.Rollback += " — " + rb.Reason
		}
	}
	for _, s := range v.Stages {
		for _, p := range s.Passes {
			out.Deployed = out.Deployed || p.BatchesSucceeded > 0
		}
		out.Stages = append(out.Stages, Stage{Name: s.Name, Wave: s.Wave, State: string(s.State),
			StartedAt: timeOrNil(s.StartedAt), FinishedAt: timeOrNil(s.FinishedAt), Gate: s.Gate,
			Approval: s.Approval, Passes: passes(s.Passes)})
	}
	return out
}

// passes says where a stage deploys: "eu-1a (2 hosts, 1/2 batches)".
func passes(ps []rolloutflow.PassView) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s (%s, %d/%d batches)", p.Name, plural(p.Hosts, "host"), p.BatchesSucceeded, p.Batches))
	}
	return strings.Join(parts, ", ")
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
