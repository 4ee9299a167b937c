package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Agent defaults.
const (
	// DefaultResync is how often every tracked workload's current state is
	// sent again (the Rollouts controller's own resync).
	DefaultResync = 15 * time.Minute
)

// Rollouts watch modes (Config.Rollouts).
const (
	RolloutsAuto = "auto" // watch them when the cluster serves argoproj.io/v1alpha1 rollouts
	RolloutsOn   = "on"
	RolloutsOff  = "off"
)

// Config is `ripcord agent`'s configuration; zero values take the defaults.
type Config struct {
	Cluster string
	// Server is ripcord's base URL; Token returns the cluster's bearer
	// token (read per request, so a rotated token file is picked up).
	Server string
	Token  func() (string, error)
	// Namespace limits the watch; "" watches every namespace.
	Namespace string
	Resync    time.Duration
	// StateDir holds the spool, the action journal and the agent id.
	StateDir string
	SpoolMax int
	PollWait time.Duration
	// MaxBackoff caps the pause between two attempts to reach the server
	// (default 30 s).
	MaxBackoff time.Duration
	Rollouts   string
	// Health, RolloutTimeout and RolloutPoll tune rollbacks.
	Health         HealthConfig
	RolloutTimeout time.Duration
	RolloutPoll    time.Duration
	// HTTP talks to the server; the health check has its own client.
	HTTP *http.Client
	Log  *slog.Logger
	Now  func() time.Time
}

// Agent is a running `ripcord agent`.
type Agent struct {
	cfg     Config
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	id      string
	metrics *metrics
	deliver *deliverer
	watch   *watcher
	actions *actionRunner

	mu    sync.Mutex
	ready bool
}

// New checks the configuration and opens the state folder.
func New(cfg Config, kube kubernetes.Interface, dyn dynamic.Interface) (*Agent, error) {
	var problems []string
	if cfg.Cluster == "" {
		problems = append(problems, "cluster is required")
	}
	if !strings.HasPrefix(cfg.Server, "http://") && !strings.HasPrefix(cfg.Server, "https://") {
		problems = append(problems, fmt.Sprintf("server %q is not an http(s) URL", cfg.Server))
	}
	if cfg.Token == nil {
		problems = append(problems, "token is required")
	}
	if cfg.StateDir == "" {
		problems = append(problems, "state-dir is required")
	}
	switch cfg.Rollouts {
	case "":
		cfg.Rollouts = RolloutsAuto
	case RolloutsAuto, RolloutsOn, RolloutsOff:
	default:
		problems = append(problems, fmt.Sprintf("rollouts must be auto, on or off, got %q", cfg.Rollouts))
	}
	if len(problems) > 0 {
		return nil, errors.New("agent: " + strings.Join(problems, "; "))
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = DefaultPollWait
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = deliverMaxBackoff
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &Agent{cfg: cfg, kube: kube, dyn: dyn, metrics: newMetrics()}
	var err error
	if a.id, err = agentID(cfg.StateDir); err != nil {
		return nil, err
	}
	spool, err := OpenSpool(filepath.Join(cfg.StateDir, "spool"), cfg.SpoolMax)
	if err != nil {
		return nil, err
	}
	j, err := openJournal(filepath.Join(cfg.StateDir, "actions"))
	if err != nil {
		return nil, err
	}
	j.prune(cfg.Now())
	log := cfg.Log.With("cluster", cfg.Cluster)
	a.deliver = newDeliverer(spool, cfg.HTTP, cfg.Server, cfg.Cluster, cfg.Token, a.metrics, log)
	a.deliver.maxBackoff = cfg.MaxBackoff
	a.watch = newWatcher(cfg.Cluster, cfg.Now, a.deliver.enqueue, a.metrics, log)
	roll := &Rollbacker{Kube: kube, HTTP: PodClient(), Health: cfg.Health, RolloutTimeout: cfg.RolloutTimeout,
		RolloutPoll: cfg.RolloutPoll, Now: cfg.Now}
	a.actions = &actionRunner{base: actionsURL(cfg.Server, cfg.Cluster), agent: a.id, http: cfg.HTTP, token: cfg.Token,
		journal: j, roll: roll, wait: cfg.PollWait, maxBackoff: cfg.MaxBackoff, metrics: a.metrics, log: log, now: cfg.Now, inflight: map[string]bool{}}
	return a, nil
}

// ID is the agent's identity towards the server.
func (a *Agent) ID() string { return a.id }

// Run watches, delivers and carries out actions until ctx ends; the spool
// and the journal keep what is unfinished for the next start.
func (a *Agent) Run(ctx context.Context) error {
	log := a.cfg.Log.With("cluster", a.cfg.Cluster)
	watchRollouts, why := a.rolloutsServed()
	if !watchRollouts && a.cfg.Rollouts == RolloutsAuto {
		log.Info("Argo Rollouts are not served by this cluster; watching Deployments only, and looking again at every resync", "why", why)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.deliver.run(ctx) }()
	go func() { defer wg.Done(); a.actions.run(ctx) }()
	watches := []startedWatch{a.watch.deployments(ctx, a.kube, a.cfg.Namespace, a.cfg.Resync)}
	if watchRollouts {
		watches = append(watches, a.watch.rollouts(ctx, a.dyn, a.cfg.Namespace, a.cfg.Resync))
	}
	synced := make([]cache.InformerSynced, len(watches))
	for i, w := range watches {
		synced[i] = w.synced
	}
	log.Info("ripcord agent started", "agent", a.id, "server", a.cfg.Server, "namespace", cmpOr(a.cfg.Namespace, "(all)"),
		"rollouts", watchRollouts, "resync", a.cfg.Resync, "spooled", a.deliver.spool.Len())
	if cache.WaitForCacheSync(ctx.Done(), synced...) {
		for _, w := range watches {
			a.watch.hold(w)
		}
		a.mu.Lock()
		a.ready = true
		a.mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); a.sendInventories(ctx) }()
		if !watchRollouts && a.cfg.Rollouts == RolloutsAuto {
			wg.Add(1)
			go func() { defer wg.Done(); a.discoverRollouts(ctx, log) }()
		}
	}
	<-ctx.Done()
	wg.Wait()
	log.Info("ripcord agent stopped", "spooled", a.deliver.spool.Len())
	return nil
}

// discoverRollouts looks for Argo Rollouts at every resync, with
// --rollouts=auto on a cluster that did not serve them at the start, and
// starts their watch once it does: Argo Rollouts installed after the agent
// need no restart. Their watch joins the inventory once it has listed them.
func (a *Agent) discoverRollouts(ctx context.Context, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.cfg.Resync):
		}
		if served, why := a.rolloutsServed(); !served {
			log.Debug("Argo Rollouts are still not served by this cluster", "why", why)
			continue
		}
		log.Info("Argo Rollouts are served by this cluster now; watching them")
		w := a.watch.rollouts(ctx, a.dyn, a.cfg.Namespace, a.cfg.Resync)
		if cache.WaitForCacheSync(ctx.Done(), w.synced) {
			a.watch.hold(w)
		}
		return
	}
}

// rolloutsServed decides whether to watch Argo Rollouts; why says why not
// when auto finds them not served.
func (a *Agent) rolloutsServed() (served bool, why string) {
	switch a.cfg.Rollouts {
	case RolloutsOff:
		return false, "rollouts=off"
	case RolloutsOn:
		return true, ""
	}
	list, err := a.kube.Discovery().ServerResourcesForGroupVersion(RolloutResource.GroupVersion().String())
	if err != nil {
		return false, err.Error()
	}
	for _, r := range list.APIResources {
		if r.Name == RolloutResource.Resource {
			return true, ""
		}
	}
	return false, RolloutResource.GroupVersion().String() + " has no " + RolloutResource.Resource
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Handler serves /healthz and /metrics.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.metrics.registry, promhttp.HandlerOpts{}))
	return mux
}

// healthz is 200 once the watches have listed every tracked workload. A
// server outage does not make the agent unhealthy: restarting it would not
// help, and the spool is there for that.
func (a *Agent) healthz(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	ready := a.ready
	a.mu.Unlock()
	body := map[string]any{"status": "ok", "agent": a.id, "cluster": a.cfg.Cluster,
		"spooled": a.deliver.spool.Len(), "last_delivery_error": a.deliver.lastError()}
	status := http.StatusOK
	if !ready {
		body["status"], status = "starting: the watches have not listed the tracked workloads yet", http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// TokenFile reads a bearer token from a file on every call, so the agent
// moves to a rotated token without a restart. The agent presents one
// token: a file of several (the server's, during a rotation) is an error.
func TokenFile(path string) func() (string, error) {
	return func() (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("token-file: %w", err)
		}
		toks := strings.Fields(string(b))
		switch len(toks) {
		case 0:
			return "", fmt.Errorf("token-file %s is empty", path)
		case 1:
			return toks[0], nil
		}
		return "", fmt.Errorf("token-file %s holds %d tokens; the agent sends one: give it the new token alone", path, len(toks))
	}
}
