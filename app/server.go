package app

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/setup"
	"github.com/ripcord/ripcord/internal/memtrim"
	"github.com/ripcord/ripcord/internal/oidcauth"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// Server defaults.
const (
	shutdownTimeout   = 30 * time.Second
	readHeaderTimeout = 10 * time.Second
	// readTimeout bounds reading a whole request, body included, so that a
	// client sending its body a byte at a time cannot hold a connection
	// (and a handler) for ever. The largest body, a 25 MiB webhook, takes
	// it at 430 KB/s; a long poll is not cut by it, as Go stops the
	// deadline once the body is read.
	readTimeout = time.Minute
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds a request's headers, which Go otherwise reads
	// up to 1 MiB of for each connection: GitHub's webhook headers, a
	// bearer token, an OIDC token and the pages' cookies are a few KiB.
	maxHeaderBytes = 64 << 10
	// stopCancelWait is how long a stop waits for jobs it cancelled.
	stopCancelWait = 2 * time.Second
)

// Server is `ripcord serve`: the HTTP server, the job queue and the store.
type Server struct {
	cfg    *config.Config
	db     *store.DB
	river  *river.Client[*sql.Tx]
	writer *groupWriter
	drain  *drainer
	// factQueues group the facts of concurrent requests into commits (factcommit.go).
	factQueues factQueues
	metrics    *metrics
	log        *slog.Logger
	// health logs database outages once each (dbhealth.go).
	health *dbHealth
	// notReadyLog logs why /readyz fails, once per reason (ops.go).
	notReadyLog readyzLog
	handler     http.Handler
	mux         *http.ServeMux
	handlers    map[string][]EventHandler
	github      githubapp.ClientCreator
	ghCalls     *ghclient.Counter
	records     *records.Store
	// configs reads repositories' .github/ripcord.yml for the stall checks.
	configs *configload.Loader
	// repoConfigs are the repositories' configs as last read
	// (pipeline.RepoConfigs): GET /api/v1/eligibility takes the window there.
	repoConfigs *pipeline.RepoConfigs
	oidc        *oidcauth.Verifier
	// live is the App in use (appcreds.go); apps stores Apps registered by /setup.
	live    atomic.Pointer[liveApp]
	apps    *setup.Store
	ghClock ghclient.Clock

	// shutdownTimeout bounds Run's graceful stop; stopping is closed when
	// it begins (pipeline.Deps.Stopping).
	shutdownTimeout time.Duration
	stopping        chan struct{}
	// readTimeout is the HTTP server's (Options.ReadTimeout).
	readTimeout time.Duration
	// commitTimeout bounds a group commit (Options.CommitTimeout).
	commitTimeout time.Duration

	mu   sync.Mutex
	addr string
}

// Options are the parts of a Server a caller may supply.
type Options struct {
	Logger *slog.Logger
	// Handlers are added to the built-in event handlers.
	Handlers []EventHandler
	// DeliveryMaxAttempts and RetryBase tune the job queue (tests shorten them).
	DeliveryMaxAttempts int
	RetryBase           time.Duration
	// GitHubClock paces GitHub writes (tests use a fake one).
	GitHubClock ghclient.Clock
	// ShutdownTimeout bounds a graceful stop (default 30 s; tests shorten it).
	ShutdownTimeout time.Duration
	// ReadTimeout bounds reading one request, headers and body (default
	// 1 minute, the headers 10 s; tests shorten both).
	ReadTimeout time.Duration
	// Gates tune the gates' evaluation (tests shorten its waits).
	Gates gatesflow.Options
	// CommitTimeout bounds one group commit of deliveries or of facts
	// (default 8 s, see commitTimeout); past it their requests answer 503.
	// Tests on a loaded machine lengthen it, and the outage tests shorten it.
	CommitTimeout time.Duration
}

// New opens the database, applies migrations and wires the server. Run starts it.
func New(ctx context.Context, cfg *config.Config, opts Options) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	db, err := store.Open(ctx, cfg.Database)
	if err != nil {
		return nil, err
	}
	if err := db.ClaimForServe(); err != nil {
		db.Close()
		return nil, err
	}
	res, err := db.Migrate(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	if n, err := db.RecoverOrphanedJobs(ctx); err != nil {
		db.Close()
		return nil, err
	} else if n > 0 {
		log.Warn("requeued jobs that were running when the last process died", "jobs", n)
	}
	log.Info("database ready", "database", db.Source, "schema_version", res.Version,
		"applied", len(res.Applied), "queue_migrations_applied", res.River)

	s := &Server{cfg: cfg, db: db, metrics: newMetrics(), log: log, handlers: map[string][]EventHandler{},
		records: records.NewStore(db), ghCalls: &ghclient.Counter{}, health: newDBHealth(log),
		shutdownTimeout: cmp.Or(opts.ShutdownTimeout, shutdownTimeout), stopping: make(chan struct{}),
		readTimeout: cmp.Or(opts.ReadTimeout, readTimeout), commitTimeout: cmp.Or(opts.CommitTimeout, commitTimeout)}
	if err := s.connectGitHub(ctx, opts); err != nil {
		db.Close()
		return nil, err
	}
	if s.oidc, err = oidcauth.New(oidcauth.Config{Issuer: cfg.OIDC.Issuer, Audience: cfg.OIDC.Audience}); err != nil {
		db.Close()
		return nil, fmt.Errorf("oidc: %w", err)
	}
	s.mux = http.NewServeMux()
	workers := river.NewWorkers()
	deps := pipeline.Deps{Config: cfg, DB: db, Records: s.records, River: func() *river.Client[*sql.Tx] { return s.river },
		GitHub: s.github, Workers: workers, Mux: s.mux, Registerer: s.metrics.registry, Log: log,
		Now: func() time.Time { return time.Now().UTC() }, APIAuth: s.requireAPIToken, App: s.appIdentity,
		Stopping: s.stopping, ApplyFacts: s.applyOwnFacts, AdmitWorkflow: s.admitWorkflow,
		RaiseAlert: func(e records.Effect) { s.raiseAlerts([]records.Effect{e}) }}
	// Kept in the database, so the readers answer the same after a
	// restart and on every replica; loaded as the Loader checks configs.
	deps.Configs = pipeline.NewStoredRepoConfigs(db, configload.ServerOptions(deps), log)
	s.configs = configload.NewLoaderFor(deps)
	s.repoConfigs = deps.Configs
	handlers := append([]EventHandler{installations{github: s.github, log: log}}, capabilities(deps, opts)...)
	for _, h := range append(handlers, opts.Handlers...) {
		for _, e := range h.Handles() {
			s.handlers[e] = append(s.handlers[e], h)
		}
	}
	setupToken, err := s.setupToken(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	setup.Register(deps, setup.Options{Store: s.apps, Events: s.handledEvents(), Activate: s.activate, Token: setupToken})
	policy := retryPolicy{base: cmp.Or(opts.RetryBase, retryBase)}
	runner := &deliveryRunner{db: db, river: func() *river.Client[*sql.Tx] { return s.river }, handlers: s.handlers,
		metrics: s.metrics, log: log, maxAttempts: cmp.Or(opts.DeliveryMaxAttempts, deliveryMaxAttempts), policy: policy}
	s.drain = newDrainer(runner, s.health, log)
	river.AddWorker(workers, &drainWakeWorker{drain: s.drain})
	river.AddWorker(workers, &retryWorker{deliveryRunner: runner})
	s.addRecordWorkers(workers)
	riverLog := slog.New(&outageQuietHandler{Handler: log.Handler(), h: s.health})
	if s.river, err = newRiver(db, workers, s.periodicJobs(), policy, riverLog); err != nil {
		db.Close()
		return nil, err
	}
	s.writer = newGroupWriter(db, s.metrics, s.acts, s.drain.Wake, s.commitTimeout)
	s.writer.health = s.health
	s.handler = s.limitBodies(s.apiMisses(s.routes()))
	switch {
	case !s.appIdentity().Configured && len(s.webhookSecrets()) == 0:
		// Without a secret no delivery can be checked, so none is stored:
		// saying "stored" here sent people looking for deliveries that
		// GitHub shows as refused.
		log.Warn("the GitHub App is not configured and no webhook secret is: every delivery is refused with 401 and ripcord cannot act on GitHub; " +
			"register it at " + setup.PageURL(cfg.PublicURL, setupToken) + " or set github.app_id, github.private_key and github.webhook_secrets (RIPCORD_GITHUB_APP_ID, RIPCORD_GITHUB_PRIVATE_KEY, RIPCORD_GITHUB_WEBHOOK_SECRET)")
	case !s.appIdentity().Configured:
		log.Warn("the GitHub App is not configured: webhooks are stored, but ripcord cannot act on GitHub; " +
			"register it at " + setup.PageURL(cfg.PublicURL, setupToken) + " or set github.app_id and github.private_key (RIPCORD_GITHUB_APP_ID, RIPCORD_GITHUB_PRIVATE_KEY)")
	case len(s.webhookSecrets()) == 0:
		log.Warn("no webhook secret is configured: every delivery is refused with 401; set github.webhook_secrets (RIPCORD_GITHUB_WEBHOOK_SECRET)")
	}
	return s, nil
}

func (s *Server) routes() http.Handler {
	mux := s.mux
	mux.Handle("POST /api/github/hook", newIntake(s.webhookSecrets, s.writer, s.metrics, s.log))
	mux.HandleFunc("GET /api/v1/deliveries", s.requireAPIToken(s.listDeliveries))
	mux.HandleFunc("GET /api/v1/deliveries/{id}", s.requireAPIToken(s.getDelivery))
	mux.HandleFunc("POST /api/v1/facts", s.postTaskFacts)
	mux.HandleFunc("POST /api/v1/facts/{cluster}", s.postClusterFacts)
	mux.HandleFunc("POST /api/v1/facts/{cluster}/inventory", s.postClusterInventory)
	mux.HandleFunc("POST /api/v1/releases", s.postRelease)
	mux.HandleFunc("GET /api/v1/releases", s.requireAPIToken(s.listReleases))
	mux.HandleFunc("GET /api/v1/releases/{id}", s.requireAPIToken(s.getRelease))
	mux.HandleFunc("GET /api/v1/releases/{id}/audit", s.requireAPIToken(s.getReleaseAudit))
	mux.HandleFunc("GET /api/v1/audit", s.requireAPIToken(s.getAudit))
	mux.HandleFunc("GET /api/v1/eligibility", s.requireAPIToken(s.getEligibility))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metricsHandler())
	mux.HandleFunc("GET /", s.home) // pagesCatchAll, written out for routeauth_test's search
	return mux
}

// pagesCatchAll is the pattern of the home page, which takes every GET no
// other route does (and answers 404 but for "/").
const pagesCatchAll = "GET /"

// apiMethods are the methods a 405 under /api/v1 looks for, to name those
// its path takes in Allow (HEAD with GET, as Go's mux does).
var apiMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// apiMisses answers a request under /api/v1 that no route takes in JSON,
// as the API answers every other error, naming the path or the method:
// the mux answered them in plain text ("404 page not found"), which
// clients reading {"error"} could not show. The pages' catch-all "GET /"
// is no route of the API, so a POST to an unknown path is a 404, not the
// mux's 405 naming GET.
func (s *Server) apiMisses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if (p != "/api/v1" && !strings.HasPrefix(p, "/api/v1/")) || s.isAPIRoute(r) {
			next.ServeHTTP(w, r)
			return
		}
		var allowed []string
		for _, m := range apiMethods {
			probe := r.Clone(r.Context())
			probe.Method = m
			if s.isAPIRoute(probe) {
				allowed = append(allowed, m)
			}
		}
		if len(allowed) == 0 {
			writeError(w, http.StatusNotFound, "", fmt.Sprintf("no API endpoint at %s (README's \"HTTP endpoints\" lists them; "+
				"a release id's / is sent escaped, %%2F)", r.URL.EscapedPath()))
			return
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, http.StatusMethodNotAllowed, "", fmt.Sprintf("%s %s is not an API endpoint; that path takes %s",
			r.Method, r.URL.EscapedPath(), strings.Join(allowed, ", ")))
	})
}

// isAPIRoute reports whether a route of the API takes r.
func (s *Server) isAPIRoute(r *http.Request) bool {
	_, pattern := s.mux.Handler(r)
	return pattern != "" && pattern != pagesCatchAll
}

// Handler is the server's HTTP handler (for tests that serve it themselves).
func (s *Server) Handler() http.Handler { return s.handler }

// Addr is the address Run listens on, once it does.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Run serves until ctx is done, then stops gracefully: it stops taking
// requests, finishes the requests and jobs in flight, and leaves queued jobs
// for the next start. A nil listener listens on cfg.Listen.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Listen); err != nil {
			s.close()
			return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
		}
	}
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.mu.Unlock()
	// River runs on its own context: cancelling ctx must lead to a graceful
	// Stop below, not to cancelled jobs.
	if err := s.river.Start(context.WithoutCancel(ctx)); err != nil {
		s.close()
		return fmt.Errorf("start job queue: %w", err)
	}
	// The drain's first round reads deliveries an earlier run left queued.
	s.drain.Start()
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: min(readHeaderTimeout, s.readTimeout),
		ReadTimeout: s.readTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.log.Info("ripcord is serving", "listen", s.addr, "public_url", s.cfg.PublicURL, "database", s.db.Source)
	// Start-up leaves tens of MB of garbage (the CDEvents SDK compiles every
	// JSON schema at init); hand it back now rather than when the scavenger
	// gets to it, so an idle server is small. The same goes for the pages of
	// code that only package inits ran (see memtrim).
	debug.FreeOSMemory()
	if _, err := memtrim.DropColdExecutablePages(); err != nil {
		s.log.Debug("could not hand back start-up code pages", "err", err)
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	s.log.Info("stopping: finishing requests and jobs in flight", "timeout", s.shutdownTimeout)
	stopCtx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
	defer cancel()
	close(s.stopping) // long polls answer now, not when their wait ends
	if err := srv.Shutdown(stopCtx); err != nil {
		s.log.Warn("http shutdown", "err", err)
	}
	s.writer.Close()
	// Whatever the stop's budget leaves: a round that does not finish in
	// it is abandoned, its deliveries left queued for the next start.
	s.drain.Stop(stopCtx)
	if err := s.river.Stop(stopCtx); err != nil {
		s.log.Warn("jobs did not finish in time; cancelling them (they run again at next start)", "err", err)
		// A job that ignores its cancelled context must not keep the
		// process past its grace period either.
		cancelCtx, cancelWait := context.WithTimeout(context.Background(), stopCancelWait)
		if err := s.river.StopAndCancel(cancelCtx); err != nil {
			s.log.Warn("jobs did not end when cancelled; stopping without them (they run again at next start)", "err", err)
		}
		cancelWait()
	}
	s.close()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

func (s *Server) close() {
	if err := s.db.Close(); err != nil {
		s.log.Warn("close database", "err", err)
	}
}

// WebURL is GitHub's web address for an API URL: github.com for
// api.github.com, the server's root for GitHub Enterprise Server's
// "https://host/api/v3/".
func WebURL(apiURL string) string {
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" {
		return "https://github.com/"
	}
	if u.Host == "api.github.com" {
		return "https://github.com/"
	}
	return u.Scheme + "://" + u.Host + strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3") + "/"
}
