package rolloutflow

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/rollout/approval"
)

// buttonHandler answers a click on the ripcord/rollout check run's Approve
// button: the clicker needs the rollout's approvals.permission and must not
// be the release's author, as for `/ripcord approve`, and the click counts
// only for the pause the check run showed when it was clicked (clickedAt).
type buttonHandler struct{ x *executor }

func (buttonHandler) Handles() []string { return []string{"check_run"} }

func (h buttonHandler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	ev, err := pipeline.RequestedAction(d, CheckName, ApproveAction)
	if ev == nil || err != nil {
		return nil, err
	}
	id, marker := splitCheckExternalID(ev.GetCheckRun().GetExternalID())
	user := ev.GetSender().GetLogin()
	r, err := getRollout(ctx, h.x.deps.DB.Read, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// A click that cannot count is refused before GitHub is asked anything
	// (the check run clicked, the clicker's permission).
	err = voteCannotCount(r)
	if err == nil {
		err = h.clickedAt(ctx, r, ev, marker)
	}
	if err != nil {
		var refused *Refused
		if errors.As(err, &refused) {
			return h.note(r.ID, "@"+user+" clicked Approve "+pauseName(r, marker)+": refused: "+refused.Reason), nil
		}
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

// clickedAt checks that the click was made at the pause r waits at now.
// GitHub signs a delivery's body, not its delivery id, and a click's body
// names the check run as it was shown: a click captured at one pause could
// otherwise be posted again at the next one of the same rollout and count
// there, for someone who never clicked it. The check run's external id
// names the pause (checkExternalID); the same click posted again at the
// same pause (after a refusal, say) still counts. A check run written
// before the external id named the pause carries the rollout's id alone:
// such a click counts only while that check run, unchanged since (its
// external id and completed_at as GitHub shows them now), is the one the
// rollout shows.
func (h buttonHandler) clickedAt(ctx context.Context, r Rollout, ev *github.CheckRunEvent, marker string) error {
	now := pauseMarker(r)
	if marker != "" {
		if marker != now && now != "" {
			return refuse("that pause is over: rollout %s waits %s now", r.ID, strings.TrimPrefix(pauseName(r, now), "at "))
		}
		if marker != now {
			return refuse("that pause is over: rollout %s is %s", r.ID, r.Machine.Status)
		}
		return nil
	}
	clicked := ev.GetCheckRun()
	if clicked.GetID() != r.CheckRunID || r.CheckRunID == 0 {
		return refuse("the check run clicked is not the one rollout %s shows now (it is %s)", r.ID, r.Machine.Status)
	}
	gh, err := h.x.deps.GitHub.NewInstallationClient(ev.GetInstallation().GetID())
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", ev.GetInstallation().GetID(), err)
	}
	owner, name, _ := strings.Cut(r.Repository, "/")
	shown, _, err := gh.Checks.GetCheckRun(ctx, owner, name, r.CheckRunID)
	if err != nil {
		return fmt.Errorf("read %s %d: %w", CheckName, r.CheckRunID, err)
	}
	if shown.GetExternalID() != clicked.GetExternalID() || !shown.GetCompletedAt().Equal(clicked.GetCompletedAt()) {
		return refuse("the check run was written again since the click (it is %s)", r.Machine.Status)
	}
	return nil
}

// pauseMarker names the pause at which r waits for a vote, "" when it
// waits for none: the approval after stage N, which a rollout waits at
// once, or a hold, named by its reason (each hold names the rollout whose
// failure set it, and a rollout fails once).
func pauseMarker(r Rollout) string {
	switch {
	case r.Machine.Phase == PhaseApproval:
		return "approval-" + strconv.Itoa(r.Machine.Stage)
	case r.Machine.Phase == PhaseQueue && r.Hold != "":
		sum := sha256.Sum256([]byte(r.Hold))
		return "hold-" + hex.EncodeToString(sum[:6])
	}
	return ""
}

// checkExternalID is the external id of r's check run: the rollout's id,
// then "/" and the pause it waits at, if any (pauseMarker).
func checkExternalID(r Rollout) string {
	if m := pauseMarker(r); m != "" {
		return r.ID + "/" + m
	}
	return r.ID
}

// splitCheckExternalID reads checkExternalID: the rollout's id and the
// pause marker, "" for a check run written without one.
func splitCheckExternalID(s string) (id, marker string) {
	i := strings.LastIndex(s, "/")
	if i < 0 || !strings.HasPrefix(s[i+1:], "approval-") && !strings.HasPrefix(s[i+1:], "hold-") {
		return s, ""
	}
	return s[:i], s[i+1:]
}

// pauseName says, for the audit trail, at which pause a click was made.
func pauseName(r Rollout, marker string) string {
	if n, ok := strings.CutPrefix(marker, "approval-"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(r.Snapshot.Plan.Stages) {
			return "at the approval after wave " + r.Snapshot.Plan.Stages[i].Wave
		}
	}
	if strings.HasPrefix(marker, "hold-") {
		return "at a hold"
	}
	if marker == "" {
		return "on a check run written before clicks named their pause"
	}
	return "at pause " + marker
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
