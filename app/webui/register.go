package webui

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/records"
)

// Register adds the pages and sign-in routes. Releases show "no rollout"
// until a rollout executor is wired in with RegisterWith.
func Register(d pipeline.Deps) []pipeline.EventHandler {
	return RegisterWith(d, nil)
}

// RegisterWith is Register with the source of rollout stages for the
// release page; nil means none.
func RegisterWith(d pipeline.Deps, rollouts Rollouts) []pipeline.EventHandler {
	newHandler(d, newUserClient(d.App, d.Config.GitHub.APIURL), rollouts).routes(d.Mux)
	return nil
}

// handler serves the pages. Everything it reads about the App goes through
// app on every request, so an App registered through /setup is used at once.
type handler struct {
	app       func() pipeline.AppIdentity
	publicURL string
	records   *records.Store
	// configs are the repositories' configs as last read (see
	// pipeline.RepoConfigs): the pages take the eligibility window from them.
	configs   *pipeline.RepoConfigs
	gh        gitHub
	access    *access
	rollouts  Rollouts
	rollbacks rollbacks
	now       func() time.Time
	log       *slog.Logger
}

func newHandler(d pipeline.Deps, gh gitHub, rollouts Rollouts) *handler {
	if rollouts == nil {
		rollouts = noRollouts{}
	}
	log := d.Log
	if log == nil {
		log = slog.Default()
	}
	app, now := d.App, d.Now
	if app == nil {
		app = func() pipeline.AppIdentity { return pipeline.AppIdentity{} }
	}
	if now == nil {
		now = time.Now
	}
	return &handler{app: app, publicURL: d.Config.PublicURL, records: d.Records, configs: d.Configs, gh: gh, access: newAccess(),
		rollouts: rollouts, rollbacks: rollbackflow.NewStarter(d), now: now, log: log}
}

// routes: GET /{$} is the exact root, so the server's catch-all GET / still
// answers every other path. /releases/{id} is the log_url GitHub
// Deployments link to: keep it.
func (h *handler) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", h.releases)
	mux.HandleFunc("GET /releases/{id}", h.release)
	mux.HandleFunc("POST /releases/{id}/rollback", h.rollback)
	mux.HandleFunc("GET /login", h.login)
	mux.HandleFunc("GET /login/callback", h.callback)
	mux.HandleFunc("GET /logout", h.logoutPage)
	mux.HandleFunc("POST /logout", h.logout)
}
