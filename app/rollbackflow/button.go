package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
)

// buttonHandler answers a click on a ripcord/release check run's Roll back
// button: the same permission check and the same rollback as
// `/ripcord rollback`, with the answer written into the check run.
type buttonHandler struct{ st *starter }

func (buttonHandler) Handles() []string { return []string{"check_run"} }

func (h buttonHandler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	ev, err := pipeline.RequestedAction(d, ReleaseCheckName, RollbackAction)
	if ev == nil || err != nil {
		return nil, err
	}
	rec, err := h.st.deps.Records.Get(ctx, ev.GetCheckRun().GetExternalID())
	if errors.Is(err, records.ErrNotFound) {
		return nil, nil // a release swept since the button was drawn
	}
	if err != nil {
		return nil, err
	}
	repository, user := ev.GetRepo().GetFullName(), ev.GetSender().GetLogin()
	if !strings.EqualFold(rec.Repository, repository) {
		// ripcord draws a release's button in the release's repository
		// only: a click from another repository that names it is none of
		// ripcord's buttons, and must neither be checked against that
		// repository's permissions nor answered in the release's trail.
		h.st.deps.Log.Warn("ignored a Roll back click on a check run of another repository than its release's",
			"release_id", rec.ReleaseID, "release_repository", rec.Repository, "repository", repository, "user", user, "delivery", d.ID)
		return nil, nil
	}
	gh, err := h.st.deps.GitHub.NewInstallationClient(ev.GetInstallation().GetID())
	if err != nil {
		return nil, fmt.Errorf("github client for installation %d: %w", ev.GetInstallation().GetID(), err)
	}
	cfg, err := h.st.loader.Load(ctx, gh.Repositories, repository, "")
	if err != nil {
		return nil, err
	}
	if !cfg.Valid() {
		return h.answer(rec, d, user, records.AuditCommandRefused, "Not rolling back: "+cfg.Explain(repository)+"."), nil
	}
	v, err := permit(ctx, gh, cfg.Config, repository, user)
	if err != nil {
		return nil, err
	}
	if !v.Allowed {
		return h.answer(rec, d, user, records.AuditCommandRefused, "Refused: "+v.Reason), nil
	}
	s := Start{App: rec.App, Environment: rec.Environment, Cluster: rec.Cluster, Of: rec.ReleaseID,
		Reason:      fmt.Sprintf("Roll back button on release %s (%s)", rec.ReleaseID, rec.State),
		RequestedBy: fmt.Sprintf("@%s with the Roll back button on %s", user, ReleaseCheckName)}
	// The job answers in this check run: the pull request's link, or why
	// it was not opened.
	out, err := h.st.start(ctx, gh, cfg.Config, repository, s, &ReplyTo{Check: rec.ReleaseID, User: user})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		reply := out.Reply
		if out.Commit != nil {
			err := out.Commit(ctx, tx)
			var refused *Refused
			if errors.As(err, &refused) {
				// Another rollback of the environment was queued since start
				// looked: the check run says so instead of "Rolling back".
				reply, err = "Not rolling back: "+refused.Reason+".", nil
			}
			if err != nil {
				return err
			}
		}
		return h.answer(rec, d, user, records.AuditCommandReceived, reply)(ctx, tx)
	}, nil
}

// answer records the click in the audit trail and shows the reply in the
// release's check run.
func (h buttonHandler) answer(rec records.Record, d pipeline.Delivery, user string, typ records.AuditType, reply string) pipeline.Commit {
	return func(ctx context.Context, tx *sql.Tx) error {
		if err := h.st.deps.Records.InsertAudit(ctx, tx, records.AuditEvent{Type: typ, ReleaseID: rec.ReleaseID,
			DeliveryID: d.ID, At: h.st.deps.Now(), Message: "@" + user + " clicked Roll back: " + reply,
			Data: map[string]any{"user": user, "button": RollbackAction}}); err != nil {
			return err
		}
		return queueNote(ctx, tx, h.st.deps.River(), ReleaseCheckArgs{ReleaseID: rec.ReleaseID,
			Version: rec.UpdatedAt.UnixMicro(), Note: "@" + user + ": " + reply})
	}
}
