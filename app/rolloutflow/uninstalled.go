package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/rollout/approval"
)

// A rollout of a repository the App was uninstalled from (its
// installation deleted, or the repository removed from it) can do nothing
// more on GitHub: no batch can be dispatched or rolled back, no run
// polled, no check run written. Left running it would tick against
// GitHub for ever, each call failing. It ends as failed instead, with the
// reason in its audit, and nothing is asked of GitHub for it after.
//
// It ends at the uninstall, in the transaction of the delivery that
// removes the repository from the installations table (uninstallHandler),
// so its status says so at once. The tick and the check run job look
// again (rolloutInstallation), for the rollouts the uninstall could not see:
// one stored by a start that read the installation before the uninstall
// and committed after it.

// uninstallHandler ends the rollouts of the repositories an installation
// deleted or installation_repositories removed event takes the App from.
// Its commit runs after the installations table's (app/installations.go)
// in the same transaction, and ends only the rollouts whose installation
// no longer lists their repository then, so it agrees with that table
// whatever the event's order among the others.
type uninstallHandler struct{ x *executor }

func (uninstallHandler) Handles() []string {
	return []string{"installation", "installation_repositories"}
}

func (h uninstallHandler) Handle(_ context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var inst int64
	var repos []string // nil: every repository of the installation
	switch d.Event {
	case "installation":
		var ev github.InstallationEvent
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			return nil, pipeline.Permanent(fmt.Errorf("decode installation event: %w", err))
		}
		if ev.GetAction() != "deleted" {
			return nil, nil
		}
		inst = ev.GetInstallation().GetID()
	case "installation_repositories":
		var ev github.InstallationRepositoriesEvent
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			return nil, pipeline.Permanent(fmt.Errorf("decode installation_repositories event: %w", err))
		}
		for _, r := range ev.RepositoriesRemoved {
			repos = append(repos, r.GetFullName())
		}
		if len(repos) == 0 {
			return nil, nil
		}
		inst = ev.GetInstallation().GetID()
	default:
		return nil, nil
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		return h.x.endUninstalledOf(ctx, tx, inst, repos)
	}, nil
}

// endUninstalledOf ends the unfinished rollouts of installation inst (of
// repos only, when set) whose repository the installation no longer lists.
func (x *executor) endUninstalledOf(ctx context.Context, tx *sql.Tx, inst int64, repos []string) error {
	query := `SELECT id FROM rollouts r WHERE r.installation_id = $1 AND r.phase <> 'done'
		AND NOT EXISTS (SELECT 1 FROM installation_repositories i
			WHERE i.installation_id = r.installation_id AND i.repository = r.repository)`
	args := []any{inst}
	if repos != nil {
		marks := make([]string, len(repos))
		for i, repo := range repos {
			marks[i] = fmt.Sprintf("$%d", i+2)
			args = append(args, repo)
		}
		query += ` AND r.repository IN (` + strings.Join(marks, ", ") + `)`
	}
	ids, err := selectIDs(ctx, tx, query+` ORDER BY r.created_at, r.id`, args...)
	if err != nil {
		return fmt.Errorf("rollouts of uninstalled installation %d: %w", inst, err)
	}
	for _, id := range ids {
		r, err := getRolloutToSave(ctx, x.deps.DB, tx, id)
		if err != nil {
			return err
		}
		if err := x.endUninstalled(ctx, tx, &r); err != nil {
			return err
		}
	}
	return nil
}

// installState is what the installations table says of a rollout's
// installation: whether it still lists the rollout's repository, and
// whether it is suspended (suspended.go).
type installState struct {
	id                   int64
	installed, suspended bool
}

// rolloutInstallation reads the installState of rollout id's installation:
// not installed when the App was uninstalled from its repository, and
// ErrNotFound when there is no such rollout.
func rolloutInstallation(ctx context.Context, q querier, id string) (installState, error) {
	var s installState
	err := q.QueryRowContext(ctx, `SELECT r.installation_id, EXISTS (SELECT 1 FROM installation_repositories i
		WHERE i.installation_id = r.installation_id AND i.repository = r.repository),
		EXISTS (SELECT 1 FROM installations i WHERE i.id = r.installation_id AND i.suspended)
		FROM rollouts r WHERE r.id = $1`, id).Scan(&s.id, &s.installed, &s.suspended)
	if errors.Is(err, sql.ErrNoRows) {
		return s, ErrNotFound
	}
	if err != nil {
		return s, fmt.Errorf("installation of rollout %s: %w", id, err)
	}
	return s, nil
}

// lookBeforeGitHub is the tick's first look, before any GitHub call, at
// rollout id's installation; true when the tick has nothing more to do.
// The App was uninstalled from its repository: the rollout is then ended
// (endUninstalled) if it was not already. Its installation is suspended:
// the tick waits (suspended.go), its error river's snooze.
func (x *executor) lookBeforeGitHub(ctx context.Context, id string) (bool, error) {
	inst, err := rolloutInstallation(ctx, x.deps.DB.Write, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil // the tick says so as before
	case err != nil:
		return false, err
	case inst.suspended && inst.installed:
		return true, x.waitSuspended(id, inst.id)
	case inst.installed:
		return false, nil
	}
	return true, x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		r, err := getRolloutToSave(ctx, x.deps.DB, tx, id)
		if err != nil {
			return err
		}
		return x.endUninstalled(ctx, tx, &r)
	})
}

// endUninstalled stores the end of rollout r, which the App was
// uninstalled from (Machine.uninstalled), with its audit, and wakes the
// rollouts queued behind it. It queues no check run: none can be written.
// A tick that read r before loses its save (seq), and finds it ended.
func (x *executor) endUninstalled(ctx context.Context, tx *sql.Tx, r *Rollout) error {
	evs := r.Machine.uninstalled(r.Repository)
	if len(evs) == 0 {
		return nil
	}
	now := x.deps.Now()
	r.WakeAt = time.Time{}
	if err := saveMachine(ctx, tx, r, now); err != nil {
		return err
	}
	for _, e := range evs {
		if err := insertAudit(ctx, tx, r.ID, now, e.Type, e.Message); err != nil {
			return err
		}
	}
	x.deps.Log.Warn("rollout ended: the App was uninstalled from its repository", "rollout", r.ID,
		"repository", r.Repository, "installation", r.InstallationID)
	return queueTicksBehind(ctx, tx, x.deps.River(), r.App, r.Environment)
}

// uninstalled ends the machine as failed because the App was uninstalled
// from repository, and returns the events of the end (none when it had
// ended). on_failure does not apply, nor are the batches in flight waited
// for (awaitInFlight): each would need GitHub. A rollout that had failed
// already, rolling back or waiting for its batches, ends there, its
// rollback failed.
func (m *Machine) uninstalled(repository string) []Event {
	if m.Phase == PhaseDone {
		return nil
	}
	why := "the App was uninstalled from " + repository
	var evs []Event
	if m.Status == Failed {
		if m.Rollback != nil && m.Rollback.Outcome == "running" {
			m.Rollback.Outcome, m.Rollback.Reason = "failed", why
			evs = append(evs, Event{Type: "rollback-failed", Message: "rollback failed: " + why})
		}
		m.Phase, m.Paused = PhaseDone, ""
		evs = append(evs, Event{Type: "uninstalled", Message: "the rollout has ended: " + why})
		return evs
	}
	if m.Phase == PhaseApproval {
		m.Stages[m.Stage].Approval = string(approval.Pending)
	} else if m.Stage < len(m.Stages) && (m.Stages[m.Stage].State == StageRunning || m.Stages[m.Stage].State == StageBaking) {
		m.Stages[m.Stage].State = StageFailed
		if m.Stages[m.Stage].Gate == "" {
			m.Stages[m.Stage].Gate = why
		}
	}
	m.Passes, m.ApprovalSince, m.Paused, m.PausedUntil = nil, time.Time{}, "", time.Time{}
	m.end(Failed, why, &evs)
	return evs
}
