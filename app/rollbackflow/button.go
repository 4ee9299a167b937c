package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// buttonHandler answers a click on a ripcord/release check run's Roll back
// button: the same permission check and the same rollback as
// `/ripcord rollback`, with the answer written into the check run. A click
// counts only for the check run as it stood when it was clicked
// (clickedOn).
type buttonHandler struct{ st *starter }

func (buttonHandler) Handles() []string { return []string{"check_run"} }

func (h buttonHandler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	ev, err := pipeline.RequestedAction(d, ReleaseCheckName, RollbackAction)
	if ev == nil || err != nil {
		return nil, err
	}
	releaseID, clicked := splitReleaseCheckExternalID(ev.GetCheckRun().GetExternalID())
	rec, err := h.st.deps.Records.Get(ctx, releaseID)
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
	answered, why, err := h.clickedOn(ctx, gh, rec, ev.GetCheckRun(), clicked)
	if err != nil {
		return nil, err
	}
	if why != "" {
		return h.answer(rec, d, user, records.AuditCommandRefused, "Refused: "+why), nil
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
		// Another click (this one posted again, say) was answered since
		// this one was checked: the check run it was made on is gone.
		now, err := clicksAnswered(ctx, tx, rec.ReleaseID)
		if err != nil {
			return err
		}
		if now != answered {
			return h.answer(rec, d, user, records.AuditCommandRefused, "Refused: "+staleClick)(ctx, tx)
		}
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

// staleClick is the answer to a click made on the check run as it stood
// before an answer to another click was written into it.
const staleClick = "this click was made on this check run as it stood before a later answer; " +
	"if you mean to roll back, click Roll back again"

// clickMarker is what a click's check run external id says of the answers
// shown when it was clicked (releaseCheckExternalID).
type clickMarker struct {
	answered int
	// marked is false for a check run written before its external id
	// counted answers: the release id alone.
	marked bool
}

// releaseCheckExternalID is the external id of a release's check run: the
// release id, then "/rollback-" and how many clicks on its Roll back button
// were answered when it was written (clicksAnswered). Each answer is
// written into the check run, and GitHub's payload of a click carries the
// external id as the check run showed it, so a click names the answer it
// was made after.
func releaseCheckExternalID(releaseID string, answered int) string {
	return releaseID + "/rollback-" + strconv.Itoa(answered)
}

// splitReleaseCheckExternalID reads releaseCheckExternalID. Anything else
// is the release id alone, unmarked: a check run written before external
// ids counted answers.
func splitReleaseCheckExternalID(s string) (string, clickMarker) {
	i := strings.LastIndex(s, "/rollback-")
	if i < 0 {
		return s, clickMarker{}
	}
	digits := s[i+len("/rollback-"):]
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return s, clickMarker{}
	}
	return s[:i], clickMarker{answered: n, marked: true}
}

// clicksAnswered is how many clicks on releaseID's Roll back button were
// answered (answer writes each in the audit trail, which keeps every
// event for good, with the note that rewrites the check run), at or after
// since when it is not zero.
func clicksAnswered(ctx context.Context, db querier, releaseID string, since ...time.Time) (int, error) {
	q, args := `SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND data->>'button' = $2`, []any{releaseID, RollbackAction}
	if len(since) > 0 {
		q, args = q+` AND at >= $3`, append(args, store.Micros(since[0]))
	}
	var n int
	if err := db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the answered Roll back clicks of %s: %w", releaseID, err)
	}
	return n, nil
}

// clickedOn checks that a click was made on rec's check run as it stands:
// after the answers counted now, which it returns. GitHub signs a
// delivery's body, not its delivery id, so a click someone captured could
// otherwise be posted again under a new id once the rollback it opened was
// closed, and open another in the clicker's name. why, when not "", is why
// the click does not count. A click on a check run written before external
// ids counted answers (marker.marked false) counts only while GitHub
// shows that check run as it was clicked (its external id the release id
// alone, completed when it was: GitHub's API does not show a check run's
// buttons, and ripcord shows the button on completed runs only) and no
// click was answered since it was written.
func (h buttonHandler) clickedOn(ctx context.Context, gh *github.Client, rec records.Record, clicked *github.CheckRun,
	marker clickMarker) (answered int, why string, err error) {
	db := h.st.deps.DB.Read
	if answered, err = clicksAnswered(ctx, db, rec.ReleaseID); err != nil {
		return 0, "", err
	}
	if marker.marked {
		if marker.answered != answered {
			return answered, staleClick, nil
		}
		return answered, "", nil
	}
	owner, name, _ := strings.Cut(rec.Repository, "/")
	shown, _, err := gh.Checks.GetCheckRun(ctx, owner, name, clicked.GetID())
	if err != nil {
		return 0, "", fmt.Errorf("read %s %d of %s: %w", ReleaseCheckName, clicked.GetID(), rec.ReleaseID, err)
	}
	if shown.GetExternalID() != rec.ReleaseID || shown.GetStatus() != "completed" || shown.CompletedAt == nil ||
		!shown.GetCompletedAt().Equal(clicked.GetCompletedAt()) {
		return answered, staleClick, nil
	}
	since, err := clicksAnswered(ctx, db, rec.ReleaseID, shown.GetCompletedAt().Time)
	if err != nil {
		return 0, "", err
	}
	if since > 0 { // its answer is not written into the check run yet
		return answered, staleClick, nil
	}
	return answered, "", nil
}
