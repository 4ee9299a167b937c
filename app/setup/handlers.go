package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/ripcord/ripcord/app/pipeline"
)

// Options are what the set-up flow needs beyond the pipeline's Deps.
type Options struct {
	Store *Store
	// Events are the events the server's handlers handle; the manifest's
	// default_events are derived from them.
	Events []string
	// Activate hands newly registered credentials to the running server
	// (GitHub clients, webhook secret, identity); it fails when they cannot
	// be used.
	Activate func(ctx context.Context, c Credentials) error
	// Client makes the code exchange; nil is http.DefaultClient.
	Client *http.Client
	// Token is the set-up token this process logged at start (NewToken,
	// recorded with Store.AddToken); "" when it started with an App. Until
	// an App is configured the page shows its forms only with a token a
	// replica logged: the callback needs no token, since it needs a state
	// that only such a page gives out.
	Token string
}

// Register adds GET /setup and GET /setup/callback to d.Mux.
func Register(d pipeline.Deps, o Options) {
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	h := &handlers{d: d, o: o}
	d.Mux.HandleFunc("GET "+PagePath, h.page)
	d.Mux.HandleFunc("GET "+CallbackPath, h.callback)
}

type handlers struct {
	d pipeline.Deps
	o Options
	// mu makes registrations in this process one at a time, so a second
	// callback sees the first one's App as configured.
	mu sync.Mutex
}

// page is GET /setup: the App's status once configured, the registration
// forms otherwise. ?org=NAME adds the organisation's form (no JavaScript:
// the form's address depends on the name).
func (h *handlers) page(w http.ResponseWriter, r *http.Request) {
	app := h.d.App()
	public := h.d.Config.PublicURL
	if app.Configured {
		v := configuredView(app, public)
		h.installed(r, &v)
		render(w, http.StatusOK, configuredPage, v)
		return
	}
	stored, ok, err := h.o.Store.Registered(r.Context())
	if err != nil {
		h.d.Log.Error("set-up page", "err", err)
		renderError(w, http.StatusInternalServerError, "Cannot read the stored App", err.Error())
		return
	}
	if ok {
		render(w, http.StatusOK, configuredPage, storedView(stored, app, public))
		return
	}
	token := r.URL.Query().Get(TokenParam)
	accepted, err := h.o.Store.TokenAccepted(r.Context(), token, h.o.Token)
	if err != nil {
		h.d.Log.Error("set-up page", "err", err)
		renderError(w, http.StatusInternalServerError, "Cannot check the set-up token", err.Error())
		return
	}
	if !accepted {
		renderError(w, http.StatusForbidden, "Set-up is not finished: this page needs the set-up token", noTokenMessage(token != "", public))
		return
	}
	status := http.StatusOK
	org := strings.TrimSpace(r.URL.Query().Get("org"))
	var orgErr string
	if org != "" {
		if err := CheckOrg(org); err != nil {
			org, orgErr, status = "", err.Error(), http.StatusBadRequest
		}
	}
	state, err := h.o.Store.IssueState(r.Context(), h.d.Now())
	if err != nil {
		h.d.Log.Error("set-up page", "err", err)
		renderError(w, http.StatusInternalServerError, "Cannot start the registration", err.Error())
		return
	}
	v := registerView{Public: public, Hook: public + HookPath, Permissions: Permissions, Events: Events(h.o.Events),
		Org: org, OrgError: orgErr, WebURL: app.WebURL, Secret: len(h.d.Config.GitHub.WebhookSecrets) > 0, Token: token,
		PersonalAction: FormAction(app.WebURL, "", state), PersonalManifest: manifestJSON(public, "", state, h.o.Events)}
	if org != "" {
		v.OrgAction, v.OrgManifest = FormAction(app.WebURL, org, state), manifestJSON(public, org, state, h.o.Events)
	}
	render(w, status, registerPage, v)
}

// noTokenMessage tells who came without the set-up token (or with one no
// server logged) where to find it.
func noTokenMessage(given bool, public string) string {
	what := "Registering ripcord's GitHub App needs the set-up token, which only ripcord's log shows."
	if given {
		what = "This is not a set-up token ripcord logged."
	}
	return what + " When ripcord starts with no App, its start-up log says \"the GitHub App is not configured\" and gives the link to open, " +
		PageURL(public, "…") + " with the token in full: open that link (with several replicas, the one of any replica's log works). " +
		"Or configure an App you created on GitHub yourself: github.app_id, github.private_key and github.webhook_secrets."
}

// installed fills in v what GitHub's return from installing the App says:
// GitHub sends the admin to the App's setup URL, this page, with
// ?installation_id=…&setup_action=install (update: repositories changed;
// request: an organisation owner must approve it first). The page then
// says whether ripcord has recorded the installation's webhook, which
// tells a webhook URL GitHub cannot reach from a delivery on its way.
func (h *handlers) installed(r *http.Request, v *statusView) {
	q := r.URL.Query()
	action := q.Get("setup_action")
	id, err := strconv.ParseInt(q.Get("installation_id"), 10, 64)
	switch {
	case action == "request":
		v.Requested = true
		return
	case action != "install" && action != "update", err != nil, id <= 0:
		return
	}
	v.Installation = id
	var n int
	err = h.d.DB.Read.QueryRowContext(r.Context(),
		`SELECT COUNT(*) FROM installation_repositories WHERE installation_id = $1`, id).Scan(&n)
	if err != nil {
		h.d.Log.Warn("set-up page: look for the installation", "installation_id", id, "err", err)
		v.Unknown = true
		return
	}
	v.Recorded = n
}

func manifestJSON(public, org, state string, events []string) string {
	b, err := json.Marshal(NewManifest(public, org, state[:6], events))
	if err != nil {
		panic("setup: a manifest does not marshal: " + err.Error()) // only strings, bools, maps and slices
	}
	return string(b)
}

// strayApp reports whether a callback that comes once an App is configured
// finishes a registration of its own: its state is one a set-up page gave
// out and no callback has used. GitHub then created another App, which is
// not used. A used state is a reload of the callback that registered the
// App in use (or a replay), which created nothing. The state is taken: it
// cannot register anything any more.
func (h *handlers) strayApp(r *http.Request) bool {
	_, ok, err := h.o.Store.TakeState(r.Context(), r.URL.Query().Get("state"), h.d.Now())
	if err != nil {
		h.d.Log.Warn("set-up callback: check the state", "err", err)
	}
	return ok
}

// callback is GET /setup/callback?code=…&state=…, where GitHub sends the
// admin after the App is created.
func (h *handlers) callback(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if app := h.d.App(); app.Configured {
		v := configuredView(app, h.d.Config.PublicURL)
		v.Refused = h.strayApp(r)
		render(w, http.StatusConflict, configuredPage, v)
		return
	}
	// Another replica may have registered one that this one has not
	// picked up: a second App must not replace it.
	stored, ok, err := h.o.Store.Registered(r.Context())
	if err != nil {
		h.d.Log.Error("set-up callback: look for a stored App", "err", err)
		renderError(w, http.StatusInternalServerError, "Cannot check the registration", err.Error())
		return
	}
	if ok {
		v := storedView(stored, h.d.App(), h.d.Config.PublicURL)
		v.Refused = h.strayApp(r)
		render(w, http.StatusConflict, configuredPage, v)
		return
	}
	// Without a key the App's secrets cannot be stored: say so before the
	// state is taken and the code spent, so that fixing the key and
	// reloading finishes the registration.
	if err := h.o.Store.Keys().Ready(); err != nil {
		h.d.Log.Error("set-up callback: the secrets key", "err", err)
		renderError(w, http.StatusInternalServerError, "Cannot store the App's secrets",
			err.Error()+". Set secrets_key, or let ripcord write (or read) the key file, then reload this page: "+
				"GitHub's code has not been used and stays valid for an hour.")
		return
	}
	q := r.URL.Query()
	// The state is taken before the exchange, so that two callbacks with
	// it (on any replica) cannot both register an App, and given back when
	// the exchange failed on the way: GitHub's code stays valid for an
	// hour, and a reload can finish the registration.
	state := q.Get("state")
	issued, ok, err := h.o.Store.TakeState(r.Context(), state, h.d.Now())
	if err != nil {
		h.d.Log.Error("set-up callback: check the state", "err", err)
		renderError(w, http.StatusInternalServerError, "Cannot check the registration", err.Error())
		return
	}
	if !ok {
		renderError(w, http.StatusBadRequest, "This registration link is not valid",
			"The state parameter is missing, unknown, already used or older than an hour, so this link cannot finish a registration. "+
				"If you created an App on GitHub just now, delete it there and start again from the set-up page.")
		return
	}
	apiURL := h.d.Config.GitHub.APIURL
	creds, err := exchange(r.Context(), h.o.Client, apiURL, q.Get("code"), h.d.Now())
	if errors.Is(err, errCodeRefused) {
		renderError(w, http.StatusBadRequest, "GitHub refused the registration code",
			err.Error()+". The App may exist on GitHub already: delete it there and start again from the set-up page.")
		return
	}
	if errors.Is(err, errUnavailable) {
		h.d.Log.Warn("set-up callback: exchange the code", "err", err)
		if rerr := h.o.Store.ReturnState(context.WithoutCancel(r.Context()), state, issued); rerr != nil {
			h.d.Log.Error("set-up callback: give the state back", "err", rerr)
			renderError(w, http.StatusBadGateway, "Cannot reach GitHub to finish the registration",
				err.Error()+". This link cannot be used again ("+rerr.Error()+"): delete the App on GitHub and start again from the set-up page.")
			return
		}
		renderError(w, http.StatusBadGateway, "Cannot reach GitHub to finish the registration",
			err.Error()+". GitHub's code stays valid for an hour: reload this page to try again.")
		return
	}
	if err != nil {
		h.d.Log.Error("set-up callback: exchange the code", "err", err)
		renderError(w, http.StatusBadGateway, "GitHub's answer cannot finish the registration",
			err.Error()+". The App may exist on GitHub already: delete it there and start again from the set-up page.")
		return
	}
	if err := h.o.Store.Save(r.Context(), creds); errors.Is(err, ErrRegistered) {
		renderError(w, http.StatusConflict, "Another App is registered already",
			err.Error()+". Restart this server to use it, and delete the App just created on GitHub.")
		return
	} else if err != nil {
		// The code is spent and the key was only in GitHub's answer: this
		// App cannot be stored any more, and a new registration needs it gone.
		h.d.Log.Error("set-up callback: store the App", "app_id", creds.AppID, "err", err)
		renderError(w, http.StatusInternalServerError, "Cannot store the App",
			fmt.Sprintf("GitHub created the App %s (id %d), but ripcord could not store it: %v. "+
				"GitHub hands out its private key only once, so this App cannot be used: delete it on GitHub "+
				"(%s, App settings, Advanced) and, once the database takes writes again, start again from the set-up page.",
				creds.Slug, creds.AppID, err, creds.HTMLURL))
		return
	}
	if err := h.o.Activate(r.Context(), creds); err != nil {
		h.d.Log.Error("set-up callback: use the App", "app_id", creds.AppID, "err", err)
		renderError(w, http.StatusInternalServerError, "The App is stored but cannot be used", err.Error())
		return
	}
	h.d.Log.Info("GitHub App registered through /setup and in use", "app_id", creds.AppID, "slug", creds.Slug,
		"keys", h.o.Store.Keys().Source())
	http.Redirect(w, r, creds.InstallURL(), http.StatusSeeOther)
}
