package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/app/pipeline"
)

// Refused is a vote or an abort ripcord will not take, with the reason the
// person is told.
type Refused struct{ Reason string }

func (r *Refused) Error() string { return r.Reason }

func refuse(format string, args ...any) error { return &Refused{Reason: fmt.Sprintf(format, args...)} }

// vote records login's approval (or rejection) of the wave the rollout
// waits after, and wakes the rollout. The release's author cannot approve
// it; via says where the vote came from, for the audit trail.
func (x *executor) vote(ctx context.Context, id, login string, approve bool, comment, via string) (string, error) {
	reply, commit, err := x.prepareVote(ctx, id, login, approve, comment, via)
	if err != nil {
		return "", err
	}
	return reply, x.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return commit(ctx, tx) })
}

// prepareVote checks a vote and returns the reply and the writes that
// record it, for callers that commit in their own transaction.
func (x *executor) prepareVote(ctx context.Context, id, login string, approve bool, comment, via string) (string, pipeline.Commit, error) {
	r, err := getRollout(ctx, x.deps.DB.Read, id)
	if err != nil {
		return "", nil, err
	}
	login = strings.TrimPrefix(strings.TrimSpace(login), "@")
	if login == "" {
		return "", nil, refuse("user: required, the GitHub login of the person who approves")
	}
	if err := voteCannotCount(r); err != nil {
		return "", nil, err
	}
	if isAuthor(r.Author, login) {
		return "", nil, refuse("@%s opened or merged release %s and cannot approve its rollout", login, r.ReleaseID)
	}
	if r.Machine.Phase == PhaseQueue {
		return x.prepareLift(r, login, approve, comment, via)
	}
	stage := r.Snapshot.Plan.Stages[r.Machine.Stage]
	verb := "approved"
	if !approve {
		verb = "rejected"
	}
	commit := func(ctx context.Context, tx *sql.Tx) error {
		now := x.deps.Now()
		stored, err := insertApproval(ctx, tx, r.ID, r.Machine.Stage, Approval{Login: login, Approve: approve, At: now}, comment)
		if err != nil || !stored {
			return err // a second vote of the same person changes nothing
		}
		msg := fmt.Sprintf("@%s %s wave %s (%s)%s", login, verb, stage.Wave, via, suffix(comment))
		if err := insertAudit(ctx, tx, r.ID, now, verb, msg); err != nil {
			return err
		}
		return queueTickTx(ctx, tx, x.deps.River(), r.ID)
	}
	return fmt.Sprintf("@%s %s wave %s of rollout %s", login, verb, stage.Wave, r.ID), commit, nil
}

// voteCannotCount refuses a vote on r that cannot count, from ripcord's
// own records alone: r waits for no approval (it has ended, its abort is
// stored, or it is neither at an approval between waves nor held). Every
// way to vote (the API, the check run's button, /ripcord approve) checks
// it before it asks GitHub anything (the voter's permission, the check
// run clicked), so such a vote costs no GitHub call and is told why at
// once; prepareVote checks it again on the rollout as it is then, so one
// that moved on meanwhile (while GitHub was asked) is refused still.
func voteCannotCount(r Rollout) error {
	switch {
	case final(r.Machine.Status):
		return refuse("rollout %s has ended (%s): no vote on it counts any more; a new release starts a new rollout",
			r.ID, r.Machine.Status)
	case r.AbortBy != "":
		return refuse("rollout %s was aborted by @%s (%s): no vote on it counts any more", r.ID, r.AbortBy, r.AbortReason)
	case r.Machine.Phase != PhaseApproval && (r.Machine.Phase != PhaseQueue || r.Hold == ""):
		return refuse("rollout %s is %s, not waiting for an approval: vote when its %s check run shows the Approve button "+
			"(its status is then paused-approval or paused-hold)", r.ID, r.Machine.Status, CheckName)
	}
	return nil
}

// prepareLift is a vote on a held rollout (Inputs.Hold): an approval lifts
// the hold, and the rollout starts once nothing is ahead of it; a
// rejection is refused, because abort is what ends a rollout.
func (x *executor) prepareLift(r Rollout, login string, approve bool, comment, via string) (string, pipeline.Commit, error) {
	if !approve {
		return "", nil, refuse("rollout %s is held (%s): approve starts it, abort ends it", r.ID, r.Hold)
	}
	commit := func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE rollouts SET hold = '' WHERE id = $1 AND hold <> ''`, r.ID)
		if err != nil {
			return fmt.Errorf("lift the hold of rollout %s: %w", r.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // lifted by another vote meanwhile
		}
		msg := fmt.Sprintf("@%s lifted the hold (%s)%s", login, via, suffix(comment))
		if err := insertAudit(ctx, tx, r.ID, x.deps.Now(), "hold-lifted", msg); err != nil {
			return err
		}
		return queueTickTx(ctx, tx, x.deps.River(), r.ID)
	}
	return fmt.Sprintf("@%s lifted the hold on rollout %s: it starts once no older rollout of %s/%s is left", login, r.ID, r.App, r.Environment),
		commit, nil
}

// abort stops the rollout as a failure; on_failure applies. The reply
// says what the abort found when it was stored, not when the rollout was
// read before: a tick may have taken the rollout out of the queue, and
// dispatched its first batch, in between.
func (x *executor) abort(ctx context.Context, id, login, reason string) (string, error) {
	r, err := getRollout(ctx, x.deps.DB.Read, id)
	if err != nil {
		return "", err
	}
	login = strings.TrimPrefix(strings.TrimSpace(login), "@")
	if login == "" {
		return "", refuse("user: required, the GitHub login of the person who aborts")
	}
	if final(r.Machine.Status) {
		return "", refuse("rollout %s has ended (%s): there is nothing left to abort", r.ID, r.Machine.Status)
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "no reason given"
	}
	if x.beforeAbortMark != nil {
		x.beforeAbortMark(id)
	}
	phase, err := x.markAborted(ctx, r.ID, login, reason, fmt.Sprintf("@%s aborted the rollout: %s", login, reason))
	var ended *errEnded
	switch {
	case errors.Is(err, errAbortedAlready):
		return "", refuse("rollout %s was aborted already", r.ID)
	case errors.As(err, &ended):
		return "", refuse("rollout %s has ended (%s): there is nothing left to abort", r.ID, ended.status)
	case err != nil:
		return "", err
	}
	reply := fmt.Sprintf("rollout %s aborted by @%s; on_failure %s applies", r.ID, login, r.Snapshot.Plan.OnFailure)
	if phase == PhaseQueue {
		reply = fmt.Sprintf("rollout %s aborted by @%s before it started: nothing was deployed", r.ID, login)
	}
	// The abort is stored whatever this read says: it only adds to the
	// reply when the abort is carried out.
	if inst, err := rolloutInstallation(ctx, x.deps.DB.Read, r.ID); err == nil && inst.suspended && inst.installed {
		reply += fmt.Sprintf("; it is carried out once the App's installation %d is unsuspended (suspended now: "+
			"nothing is asked of GitHub until then)", inst.id)
	}
	return reply, nil
}

var errAbortedAlready = errors.New("the rollout was aborted before")

// errEnded is an abort of a rollout that ended since it was read.
type errEnded struct{ status Status }

func (e *errEnded) Error() string { return "the rollout has ended (" + string(e.status) + ")" }

// markAborted stores the abort of rollout id, with its audit line, and
// queues the tick that carries it out; it returns the rollout's phase as
// the abort found it. The abort counts as a move (seq), as a hold does: a
// tick that read the rollout before it loses its save, so a batch it was
// about to dispatch is not claimed, nor sent, after the operator was told
// the rollout is aborted; retried, it sees the abort. A tick that stored
// its move first is seen in the phase returned (and a batch it claimed
// and had not sent yet is not sent: dispatch looks again).
func (x *executor) markAborted(ctx context.Context, id, login, reason, audit string) (Phase, error) {
	var phase string
	err := x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE rollouts SET abort_by = $1, abort_reason = $2, seq = seq + 1
			WHERE id = $3 AND abort_by = '' AND status NOT IN ($4, $5) RETURNING phase`,
			login, reason, id, string(Succeeded), string(Failed)).Scan(&phase)
		if errors.Is(err, sql.ErrNoRows) {
			var by, st string
			if err := tx.QueryRowContext(ctx, `SELECT abort_by, status FROM rollouts WHERE id = $1`, id).Scan(&by, &st); err != nil {
				return fmt.Errorf("abort rollout %s: %w", id, err)
			}
			if by != "" {
				return errAbortedAlready
			}
			return &errEnded{status: Status(st)}
		}
		if err != nil {
			return fmt.Errorf("abort rollout %s: %w", id, err)
		}
		if err := insertAudit(ctx, tx, id, x.deps.Now(), "abort", audit); err != nil {
			return err
		}
		return queueTickTx(ctx, tx, x.deps.River(), id)
	})
	return Phase(phase), err
}
