package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/rollout/approval"
)

// buttonHandler answers a click on the ripcord/rollout check run's Approve
// button: the clicker needs the rollout's approvals.permission and must not
// be the release's author, as for `/ripcord approve`.
type buttonHandler struct{ x *executor }

func (buttonHandler) Handles() []string { return []string{"check_run"} }

func (h buttonHandler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	ev, err := pipeline.RequestedAction(d, CheckName, ApproveAction)
	if ev == nil || err != nil {
		return nil, err
	}
	id, user := ev.GetCheckRun().GetExternalID(), ev.GetSender().GetLogin()
	r, err := getRollout(ctx, h.x.deps.DB.Read, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := h.x.mayVote(ctx, r, ev.GetInstallation().GetID(), user); err != nil {
		var refused *Refused
		if errors.As(err, &refused) {
			return h.note(r.ID, "@"+user+" clicked Approve: refused: "+refused.Reason), nil
		}
		return nil, err
	}
	_, commit, err := h.x.prepareVote(ctx, id, user, true, "", "the Approve button")
	var refused *Refused
	if errors.As(err, &refused) {
		return h.note(r.ID, "@"+user+" clicked Approve: refused: "+refused.Reason), nil
	}
	return commit, err
}

// note records a refused click in the rollout's audit trail.
func (h buttonHandler) note(id, msg string) pipeline.Commit {
	return func(ctx context.Context, tx *sql.Tx) error {
		return insertAudit(ctx, tx, id, h.x.deps.Now(), "approval-refused", msg)
	}
}

// mayVote checks that user may vote on r's approval: the rollout's
// approvals.permission on its repository, read through the App's
// installation, and not the release's author. A refusal is a *Refused.
func (x *executor) mayVote(ctx context.Context, r Rollout, installation int64, user string) error {
	gh, err := x.deps.GitHub.NewInstallationClient(installation)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", installation, err)
	}
	owner, name, _ := strings.Cut(r.Repository, "/")
	level, _, err := gh.Repositories.GetPermissionLevel(ctx, owner, name, user)
	if err != nil {
		return fmt.Errorf("permission of %s on %s: %w", user, r.Repository, err)
	}
	role := level.GetRoleName()
	if role == "" {
		role = level.GetPermission()
	}
	if err := approval.CanVote(r.Snapshot.Settings.approvals(), authors(r.Author), user, role); err != nil {
		return refuse("%s", err.Error())
	}
	return nil
}
