package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
)

// A rollout whose installation is suspended (an owner of the account
// suspended the App, and the installations table says so,
// app/installations.go) can do nothing on GitHub: each call would be
// refused. Unlike an uninstall (uninstalled.go) a suspension is undone by
// unsuspend, so the rollout does not end: its tick and its check run job
// look before any GitHub call and wait (a river snooze, which costs no
// attempt and logs no error), its status says it is paused by the
// suspension, and unsuspend queues its tick, so it goes on where it was.

// suspendedLook is how long a job of a rollout whose installation is
// suspended waits before it looks again: unsuspend wakes the rollout at
// once (unsuspendHandler), this is for an unsuspend whose delivery is
// late.
const suspendedLook = runPoll

// waitSuspended is what a job of rollout id answers while its
// installation is suspended: wait, and look again later.
func (x *executor) waitSuspended(id string, installation int64) error {
	x.deps.Log.Debug("rollout waits: the App's installation is suspended", "rollout", id, "installation", installation)
	return river.JobSnooze(suspendedLook)
}

// suspendedOf is, of the rollouts ids that have not ended, those whose
// installation is suspended, by id: what their status says they are paused
// by (suspendedPause). One query for them all (a page of the list).
func suspendedOf(ctx context.Context, q querier, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	rows, err := q.QueryContext(ctx, `SELECT r.id, i.id, i.account FROM rollouts r JOIN installations i ON i.id = r.installation_id
		WHERE r.id IN (`+in+`) AND r.phase <> 'done' AND i.suspended`, args...)
	if err != nil {
		return nil, fmt.Errorf("installations of rollouts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, account string
		var inst int64
		if err := rows.Scan(&id, &inst, &account); err != nil {
			return nil, fmt.Errorf("installations of rollouts: %w", err)
		}
		out[id] = suspension(inst, account)
	}
	return out, rows.Err()
}

// suspension says what pauses a rollout of installation inst, of account,
// while it is suspended, and what goes on.
func suspension(inst int64, account string) string {
	on := ""
	if account != "" {
		on = " on " + account
	}
	return fmt.Sprintf("the suspension of the App's installation %d%s: nothing is asked of GitHub for the rollout, "+
		"which goes on where it was once the installation is unsuspended (by an owner of the account, in its GitHub Apps settings)",
		inst, on)
}

// suspendedPause is the status's rollout.paused of a rollout paused by
// the suspension why (suspendedOf): that, then what paused it before, if
// anything.
func suspendedPause(st *StatusJSON, why string) {
	if why == "" {
		return
	}
	if st.Rollout.Paused != "" {
		why += "; and before it, " + st.Rollout.Paused
	}
	st.Rollout.Paused = why
}

// pausedBySuspension sets the paused of statuses sts (by rollout id) whose
// installation is suspended.
func pausedBySuspension(ctx context.Context, q querier, sts []*StatusJSON) error {
	ids := make([]string, len(sts))
	for i, st := range sts {
		ids[i] = st.ID
	}
	why, err := suspendedOf(ctx, q, ids)
	if err != nil {
		return err
	}
	for _, st := range sts {
		suspendedPause(st, why[st.ID])
	}
	return nil
}

// unsuspendHandler wakes the rollouts of an installation that an
// installation unsuspend event makes active again: their ticks waited
// (waitSuspended), and a rollout that waits for an event (a vote, a run)
// has none queued. Its commit runs after the installations table's in the
// same transaction (as uninstallHandler's), and wakes only the rollouts of
// an installation that table says is active then.
type unsuspendHandler struct{ x *executor }

func (unsuspendHandler) Handles() []string { return []string{"installation"} }

func (h unsuspendHandler) Handle(_ context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.InstallationEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("decode installation event: %w", err))
	}
	if ev.GetAction() != "unsuspend" {
		return nil, nil
	}
	inst := ev.GetInstallation().GetID()
	return func(ctx context.Context, tx *sql.Tx) error {
		return h.x.wakeUnsuspended(ctx, tx, inst)
	}, nil
}

// wakeUnsuspended queues a tick, and a check run write, for each rollout
// of installation inst that has not ended, when the installation is not
// suspended.
func (x *executor) wakeUnsuspended(ctx context.Context, tx *sql.Tx, inst int64) error {
	ids, err := selectIDs(ctx, tx, `SELECT r.id FROM rollouts r JOIN installations i ON i.id = r.installation_id
		WHERE r.installation_id = $1 AND r.phase <> 'done' AND NOT i.suspended ORDER BY r.created_at, r.id`, inst)
	if err != nil {
		return fmt.Errorf("rollouts of unsuspended installation %d: %w", inst, err)
	}
	for _, id := range ids {
		if err := queueTickTx(ctx, tx, x.deps.River(), id); err != nil {
			return err
		}
		if err := queueCheck(ctx, tx, x.deps.River(), id); err != nil {
			return err
		}
	}
	if len(ids) > 0 {
		x.deps.Log.Info("rollouts go on: the App's installation was unsuspended", "installation", inst, "rollouts", len(ids))
	}
	return nil
}
