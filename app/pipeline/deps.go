package pipeline

import (
	"database/sql"
	"log/slog"
	"net/http"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/oidcauth"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// Deps is what the server hands a capability: the store, the job queue, the
// GitHub clients, the release records and the configuration. A capability's
// Register function adds its workers to Workers, its routes to Mux, and
// returns its webhook handlers.
type Deps struct {
	Config  *config.Config
	DB      *store.DB
	Records *records.Store
	// River is the job queue; it is nil until the server is built, so call it
	// when a job is queued, not at registration.
	River func() *river.Client[*sql.Tx]
	// GitHub makes installation clients (ghclient's middlewares included);
	// without App credentials every call fails with an error naming them.
	GitHub     githubapp.ClientCreator
	Workers    *river.Workers
	Mux        *http.ServeMux
	Registerer prometheus.Registerer
	Log        *slog.Logger
	Now        func() time.Time
	// APIAuth wraps a handler with the api_token check of /api/v1.
	APIAuth func(http.HandlerFunc) http.HandlerFunc
	// App is the GitHub App's identity as the server knows it now.
	App func() AppIdentity
	// Configs are the repositories' configs as last read from their default
	// branches (configload fills it); nil keeps none.
	Configs *RepoConfigs
	// Stopping is closed when the server begins a graceful stop: a
	// request that waits (a long poll) answers then rather than hold the
	// stop.
	Stopping <-chan struct{}
	// ApplyFacts applies facts ripcord itself reports (a rollout in waves
	// that succeeded, rolloutflow) as POST /api/v1/facts applies them: in
	// the server's group commit, with the jobs of their effects. An error
	// means none was applied; a fact the reducer ignores is no error.
	ApplyFacts func(facts []records.Fact) error
	// RaiseAlert counts and logs an alert (ripcord_alerts_total{type}) the
	// way the stall and drift alerts are raised; call it once the
	// transaction that wrote its audit event committed. nil raises none.
	RaiseAlert func(records.Effect)
	// AdmitWorkflow holds a workflow's request for app in environment,
	// made with its OIDC token (claims), to the environment's oidc rule
	// (repoconfig.OIDCRule), as POST /api/v1/facts is held: when the rule
	// refuses the token, or cannot be checked, it answers the request
	// (403 on the rule's key, 422, 503) and is false, before the caller
	// stores anything. A capability's own OIDC endpoint calls it once it
	// knows which environment the request posts for.
	AdmitWorkflow func(w http.ResponseWriter, r *http.Request, claims *oidcauth.Claims, app, environment string) bool
}
