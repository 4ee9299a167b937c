package webui

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
)

// listLimit is how many of the newest records the releases page reads
// before keeping those the person can read; what it says of them (current,
// eligible) comes from the newest releases of each one's target, read
// apart (records.Store.NewestRan), so it holds whatever the count.
const listLimit = 500

// auditLimit bounds a release's timeline.
const auditLimit = 1000

type releasesBody struct {
	Groups []group
}

// releases is GET / once the App is set up: sign-in first, then the
// releases of the repositories the person can read.
func (h *handler) releases(w http.ResponseWriter, r *http.Request) {
	if !h.app().Configured {
		http.Redirect(w, r, "/setup", http.StatusSeeOther)
		return
	}
	ss, ok := h.signedIn(r)
	if !ok {
		h.signInPage(w, "/")
		return
	}
	repos, ok := h.readable(w, r, ss, "/")
	if !ok {
		return
	}
	rs, err := h.records.List(r.Context(), records.Filter{Limit: listLimit})
	if err != nil {
		h.internal(w, ss, "list releases", err)
		return
	}
	// What the page says of each record rests on the newest releases of
	// its own target, which the newest records of the store may not hold.
	var targets []records.Target
	seen := map[records.Target]bool{}
	for _, r := range rs {
		t := records.Target{App: r.App, Environment: r.Environment, Cluster: r.Cluster}
		if canRead(repos, r.Repository) && !seen[t] {
			seen[t] = true
			targets = append(targets, t)
		}
	}
	window, widest := h.windows(), 0
	for _, r := range rs {
		if canRead(repos, r.Repository) {
			widest = max(widest, window(r.Repository))
		}
	}
	ran, err := h.records.NewestRan(r.Context(), max(widest, 1), targets)
	if err != nil {
		h.internal(w, ss, "list releases", err)
		return
	}
	deployed, err := h.deployed(r.Context(), rs, repos)
	if err != nil {
		h.internal(w, ss, "read the releases' rollouts", err)
		return
	}
	groups := buildGroups(rs, ran, repos, deployed, window, h.now())
	for i := range groups {
		for j, tg := range groups[i].Targets {
			if tg.HasEligible {
				groups[i].Targets[j].Form = h.form(ss, tg.Current, "")
			}
		}
	}
	h.render(w, http.StatusOK, "releases", page{Title: "Releases", ss: ss, Flash: h.takeFlash(w, r),
		Body: releasesBody{Groups: groups}})
}

// release is GET /releases/{id}, the page GitHub Deployments link to. A
// release of a repository the person cannot read is "not found", like one
// that does not exist, so the page does not tell them it is there.
func (h *handler) release(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ss, ok := h.signedIn(r)
	if !ok {
		h.signInPage(w, "/releases/"+url.PathEscape(id))
		return
	}
	repos, ok := h.readable(w, r, ss, "/releases/"+url.PathEscape(id))
	if !ok {
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
	// The target's newest releases that ran, past the window by ReadAhead
	// to say why an older one is not eligible: opened ones take no place
	// in the window, so however many there are they must not crowd it out.
	// buildRelease adds rec itself when it is not among them.
	window := h.window(rec.Repository)
	same, err := h.records.NewestRan(r.Context(), window+eligibility.ReadAhead,
		[]records.Target{{App: rec.App, Environment: rec.Environment, Cluster: rec.Cluster}})
	if err != nil {
		h.internal(w, ss, "read the newest releases", err)
		return
	}
	// The app's newest records, as GET /api/v1/eligibility reads them: a
	// release that is no rollback target here says where else its image
	// ran healthy (only what the person can read).
	app, err := h.records.List(r.Context(), records.Filter{App: rec.App})
	if err != nil {
		h.internal(w, ss, "read the app's releases", err)
		return
	}
	events, err := h.records.Audit(r.Context(), records.AuditFilter{ReleaseID: id, Limit: auditLimit, Oldest: true})
	if err != nil {
		h.internal(w, ss, "read the release's audit events", err)
		return
	}
	ro, rolledOut, err := h.rollouts.Rollout(r.Context(), id)
	if err != nil {
		h.internal(w, ss, "read the release's rollout", err)
		return
	}
	v := buildRelease(rec, same, readableOf(app, repos), window, events, ro, rolledOut, h.now())
	switch {
	case (v.Release.Current || isRunning(rec, same)) && hasTarget(sameOrSelf(rec, same), window):
		v.Form = h.form(ss, id, "")
	case v.Release.Eligible:
		v.Form = h.form(ss, id, id)
	}
	h.render(w, http.StatusOK, "release", page{Title: "Release " + id, ss: ss, Flash: h.takeFlash(w, r), Body: v})
}

// window is the eligibility window of repository's releases: its
// eligibility.window as ripcord last read its config (pipeline.RepoConfigs,
// kept in the database; a page never calls GitHub for it), or
// eligibility.DefaultWindow while none is kept (never read, missing, or not
// loading).
func (h *handler) window(repository string) int {
	if cfg, ok := h.configs.Get(repository); ok && cfg.Eligibility.Window > 0 {
		return cfg.Eligibility.Window
	}
	return eligibility.DefaultWindow
}

// windows is window answering once per repository: the releases page asks
// for every record's (up to listLimit), and each answer is a read of the
// database (pipeline.RepoConfigs keeps the configs there).
func (h *handler) windows() func(repository string) int {
	seen := map[string]int{}
	return func(repository string) int {
		w, ok := seen[repository]
		if !ok {
			w = h.window(repository)
			seen[repository] = w
		}
		return w
	}
}

// readable is what ss's person can read, or false once the page has
// answered: a token GitHub refuses ends the session.
func (h *handler) readable(w http.ResponseWriter, r *http.Request, ss session, here string) (map[string]bool, bool) {
	repos, err := h.access.readable(r.Context(), h.gh, ss.Token, h.now())
	switch {
	case errors.Is(err, errTokenRefused):
		h.setCookie(w, sessionCookie, "", -1)
		h.signInPage(w, here)
		return nil, false
	case err != nil:
		h.gitHubDown(w, ss, err)
		return nil, false
	}
	return repos, true
}

type signInBody struct {
	Next      string
	CanSignIn bool
}

// signInPage shows no data at all, only the way in.
func (h *handler) signInPage(w http.ResponseWriter, next string) {
	app := h.app()
	h.render(w, http.StatusOK, "signin", page{Title: "Sign in",
		Body: signInBody{Next: "/login?" + url.Values{"next": {next}}.Encode(), CanSignIn: app.ClientID != "" && app.ClientSecret != ""}})
}

func (h *handler) gitHubDown(w http.ResponseWriter, ss session, err error) {
	h.log.Warn("web page: GitHub call failed", "err", err)
	h.say(w, http.StatusBadGateway, ss, message{Heading: "GitHub did not answer",
		Text: "ripcord could not ask GitHub who you are or what you can read. Try again in a moment.", Link: "Sign in again", LinkTo: "/login"})
}

func (h *handler) internal(w http.ResponseWriter, ss session, what string, err error) {
	h.log.Error("web page: "+what, "err", err)
	h.say(w, http.StatusInternalServerError, ss, message{Heading: "Something went wrong",
		Text: "The server could not " + what + "; the details are in its log."})
}

// deployed is, of the opened releases in rs the person can read, those a
// rollout of theirs deployed to hosts, with the rollout's status.
func (h *handler) deployed(ctx context.Context, rs []records.Record, repos map[string]bool) (map[string]string, error) {
	l, ok := h.rollouts.(DeployedLister)
	if !ok {
		return nil, nil
	}
	var ids []string
	for _, r := range rs {
		if r.State == records.StateOpened && canRead(repos, r.Repository) {
			ids = append(ids, r.ReleaseID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return l.Deployed(ctx, ids)
}
