package webui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/records"
)

// maxForm bounds a rollback form's body; maxReason the reason in it.
const (
	maxForm   = 16 << 10
	maxReason = 1000
)

// via is how the rollback's requested_by and audit trail name this page.
const via = "the releases page"

// rollbacks starts a rollback as a signed-in person: rollbackflow.Starter,
// the same permission check and decision as the command and the button.
type rollbacks interface {
	Start(ctx context.Context, req rollbackflow.StartRequest) (rollbackflow.Outcome, error)
}

// rollbackForm is a Roll back form on a page: it posts to the release it is
// shown with, and names a target only when it is not the server's choice.
type rollbackForm struct {
	Action string
	To     string
	CSRF   string
}

// form is the Roll back form for release id, with ss's token; nil when no
// token can be made (no OAuth client secret), so no form is drawn.
func (h *handler) form(ss session, id, to string) *rollbackForm {
	tok, err := csrfToken(h.app().ClientSecret, ss, rollbackAction(id))
	if err != nil {
		return nil
	}
	return &rollbackForm{Action: "/releases/" + url.PathEscape(id) + "/rollback", To: to, CSRF: tok}
}

// rollback is POST /releases/{id}/rollback: the release's environment is
// rolled back as the signed-in person, and the answer is shown on the
// release's page. Someone who may not see the release gets the page's 404.
func (h *handler) rollback(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ss, ok := h.signedIn(r)
	if !ok {
		h.signedOut(w, id)
		return
	}
	repos, err := h.access.readable(r.Context(), h.gh, ss.Token, h.now())
	switch {
	case errors.Is(err, errTokenRefused):
		h.setCookie(w, sessionCookie, "", -1)
		h.signedOut(w, id)
		return
	case err != nil:
		h.gitHubDown(w, ss, err)
		return
	}
	rec, err := h.records.Get(r.Context(), id)
	if errors.Is(err, records.ErrNotFound) || (err == nil && !canRead(repos, rec.Repository)) {
		h.noSuchRelease(w, ss, id)
		return
	}
	if err != nil {
		h.internal(w, ss, "read release", err)
		return
	}
	back := "/releases/" + url.PathEscape(id)
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	err = r.ParseForm()
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		// Not "form refused": reloading the page would not help.
		h.say(w, http.StatusRequestEntityTooLarge, ss, message{Heading: "Form too large",
			Text: fmt.Sprintf("The form is larger than %d KiB; the reason may be %d characters at most.", maxForm>>10, maxReason),
			Link: "Back to the release", LinkTo: back})
		return
	}
	if err != nil || !validCSRF(h.app().ClientSecret, ss, rollbackAction(id), r.PostForm.Get(csrfField)) {
		h.say(w, http.StatusForbidden, ss, message{Heading: "Form refused",
			Text: "This form did not come from your page here, or you signed in again since it was shown. Reload the page and try again.",
			Link: "Back to the release", LinkTo: back})
		return
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if reason == "" || len(reason) > maxReason {
		h.say(w, http.StatusBadRequest, ss, message{Heading: "Reason needed",
			Text: fmt.Sprintf("reason: say why you roll back (1 to %d characters); it goes into the rollback pull request.", maxReason),
			Link: "Back to the release", LinkTo: back})
		return
	}
	out, err := h.rollbacks.Start(r.Context(), rollbackflow.StartRequest{App: rec.App, Environment: rec.Environment,
		Cluster: rec.Cluster, To: strings.TrimSpace(r.PostForm.Get("to")), Reason: reason, User: ss.Login,
		Repository: rec.Repository, Via: via, On: rec.ReleaseID})
	if err != nil {
		h.internal(w, ss, "start the rollback", err)
		return
	}
	h.setFlash(w, flashFor(out))
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// flashFor says what a rollback request came to.
func flashFor(out rollbackflow.Outcome) flash {
	switch {
	case out.Refused != "":
		return flash{Text: "Not rolling back: " + out.Refused + "."}
	case out.Open != nil:
		f := flash{OK: true, Text: "This rollback is open already: release " + out.Open.ReleaseID + "."}
		if out.Open.PRURL != "" {
			f.Link, f.LinkText = out.Open.PRURL, "its pull request"
		}
		return f
	}
	p := out.Plan
	verdict := "an eligible rollback target"
	if e := p.Request.Rollback.Eligibility; !e.Eligible {
		verdict = "not an eligible rollback target (" + e.Reason + "), so it gets every gate"
	}
	text := fmt.Sprintf("Rollback queued: release %s replaces %s with %s, %s. The pull request opens on %s in a moment.",
		p.Record.ReleaseID, p.Record.RollbackOf, p.Target, verdict, p.Request.Repository)
	if out.Queued.Duplicate {
		text = fmt.Sprintf("This rollback was queued already: release %s replaces %s with %s. Its pull request opens on %s in a moment.",
			p.Record.ReleaseID, p.Record.RollbackOf, p.Target, p.Request.Repository)
	}
	return flash{OK: true, Text: text, Link: "/releases/" + url.PathEscape(p.Record.ReleaseID), LinkText: "the rollback's page"}
}

// signedOut answers a form posted without a (valid) session: its session
// ended while the page was open, or GitHub no longer takes its token. The
// person is told nothing was done and how to go on; the answer is the same
// for every id, so it does not tell whether the release exists.
func (h *handler) signedOut(w http.ResponseWriter, id string) {
	back := "/releases/" + url.PathEscape(id)
	h.say(w, http.StatusForbidden, session{}, message{Heading: "Signed out",
		Text: fmt.Sprintf("You are not signed in any more (a sign-in lasts %d hours, and ends when GitHub stops accepting it), "+
			"so nothing was rolled back. Sign in, then use the Roll back form again.", int(sessionLifetime.Hours())),
		Link: "Sign in", LinkTo: "/login?" + url.Values{"next": {back}}.Encode()})
}

func (h *handler) noSuchRelease(w http.ResponseWriter, ss session, id string) {
	h.say(w, http.StatusNotFound, ss, message{Heading: "No such release",
		Text: "There is no release " + id + " in a repository you can read.", Link: "All releases", LinkTo: "/"})
}

// isRunning reports whether rec is what its environment runs: the newest
// release in same (newest first) that ran, as rollbackflow decides.
// While a rollback's pull request is open, the release it replaces is still
// running, and its page still offers the form (which then says the rollback
// is open already).
func isRunning(rec records.Record, same []records.Record) bool {
	return rec.Ran() && running(same) == rec.ReleaseID
}

// hasTarget reports whether some release in same (newest first) other than
// the current one is an eligible rollback target, so a form is worth
// showing on the current release. buildRow never calls the current release
// or an opened one eligible, whichever place they have in same.
func hasTarget(same []records.Record, window int) bool {
	for _, r := range same {
		if buildRow(r, same, nil, window, r.CreatedAt).Eligible {
			return true
		}
	}
	return false
}
