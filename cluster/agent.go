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
	// TokenFrom says where Token comes from ("environment variable
	// RIPCORD_CLUSTER_TOKEN", a file and what named it), for the log line
	// of a 401: the server cannot tell a stale token from a wrong source.
	TokenFrom string
	// Namespace limits the watch, and the cluster actions the agent is
	// handed to those of workloads there; "" watches every namespace and
	// takes any of the cluster's actions.
	Namespace string
	Resync    time.Duration
	// StateDir holds the spool and the action journal (and the agent's
	// id when it may not use its Lease, see runActions).
	StateDir string
	// ID is the agent's id towards the server; "" is DefaultAgentID of
	// Cluster and Namespace. The agents of one id take turns carrying
	// out actions through a Lease named after it in LeaseNamespace (""
	// is Namespace, or "default" when that is "" too).
	ID             string
	LeaseNamespace string
	SpoolMax       int
	PollWait       time.Duration
	// ListPatience is how long the watches' requests to list Deployments
	// or Rollouts may fail in a row (other than forbidden) before the agent
	// reports without them and says so (DefaultListPatience; tests
	// shorten it).
	ListPatience time.Duration
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
	cfg  Config
	kube kubernetes.Interface
	dyn  dynamic.Interface
	// id is guarded by mu: without its Lease the agent takes another
	// (runActions). explicitID: Config.ID gave it.
	id         string
	explicitID bool
	leaseNS    string
	metrics    *metrics
	deliver    *deliverer
	watch      *watcher
	actions    *actionRunner
	// watchJoined wakes sendInventories when a watch joins the inventory.
	watchJoined chan struct{}
	// lease is what keeps the agent from taking its Lease (leaseLock):
	// a request the API server forbids, a namespace that does not exist.
	// It then carries out no action.
	lease leaseState
	// deployList is what the Deployment watch's requests last said
	// (deploymentsTrouble).
	deployList *listState

	mu sync.Mutex
	// listed is set once the watches started with the agent have listed
	// their workloads; waitingFor says what else keeps it from being
	// ready (the Rollout watch with --rollouts=on), "" when nothing.
	listed     bool
	waitingFor string
	// rolloutWatch is the Rollout watch once started, whose failing
	// requests keep the agent from being ready (rolloutsTrouble), and
	// rolloutsPending is set while the Deployments are reported without
	// it, its requests having failed, until it has listed the Rollouts.
	rolloutWatch    *startedWatch
	rolloutsPending bool
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
	if cfg.ID != "" && !actionIDPattern.MatchString(cfg.ID) {
		problems = append(problems, fmt.Sprintf("agent id %q must be 1 to 100 of A-Z a-z 0-9 _ -", cfg.ID))
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
	if cfg.ListPatience <= 0 {
		cfg.ListPatience = DefaultListPatience
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
	a := &Agent{cfg: cfg, kube: kube, dyn: dyn, metrics: newMetrics(), watchJoined: make(chan struct{}, 1), deployList: newListState(cfg.ListPatience)}
	a.id, a.explicitID = cfg.ID, cfg.ID != ""
	if a.id == "" {
		a.id = DefaultAgentID(cfg.Cluster, cfg.Namespace)
	}
	a.leaseNS = cmpOr(cfg.LeaseNamespace, cmpOr(cfg.Namespace, "default"))
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: create %s: %w", cfg.StateDir, err)
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
	a.deliver.tokenFrom = cfg.TokenFrom
	a.watch = newWatcher(cfg.Cluster, cfg.Now, a.deliver.enqueue, a.metrics, log)
	roll := &Rollbacker{Kube: kube, HTTP: PodClient(), Health: cfg.Health, RolloutTimeout: cfg.RolloutTimeout,
		RolloutPoll: cfg.RolloutPoll, Now: cfg.Now}
	a.actions = &actionRunner{base: actionsURL(cfg.Server, cfg.Cluster), agent: a.id, namespace: cfg.Namespace, http: cfg.HTTP, token: cfg.Token,
		tokenFrom: cfg.TokenFrom, journal: j, roll: roll, wait: cfg.PollWait, maxBackoff: cfg.MaxBackoff, metrics: a.metrics, log: log, now: cfg.Now,
		inflight: map[string]bool{}, polls: failureStreak{patience: deliveryPatience}}
	return a, nil
}

// ID is the agent's identity towards the server.
func (a *Agent) ID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.id
}

// Run watches, delivers and carries out actions until ctx ends; the spool
// and the journal keep what is unfinished for the next start.
//
// The agent is ready (/healthz) once every watch it runs has listed its
// workloads. A Rollout watch that cannot start yet (the cluster does not
// serve Argo Rollouts, or discovery failed) never holds back the
// Deployments: they are watched, delivered and inventoried meanwhile, and
// discoverRollouts starts the Rollout watch once the cluster serves them.
// With --rollouts=on the agent is not ready until then, and says why.
// Neither does a Rollout watch whose lists fail, at once when the agent's
// RBAC forbids them, after Config.ListPatience on any other error: the
// agent is not ready and says which permission to grant, or the error,
// and the watch joins once it lists them (joinRollouts). Requests of the
// Rollout watch that fail later, once it listed them, make the agent not
// ready again, saying so, until they succeed.
func (a *Agent) Run(ctx context.Context) error {
	log := a.cfg.Log.With("cluster", a.cfg.Cluster)
	d := a.rolloutsServed()
	if !d.served {
		a.waitingForRollouts(log, d, true)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.deliver.run(ctx) }()
	go func() { defer wg.Done(); a.runActions(ctx, log) }()
	// The Rollouts are listed before the Deployments: a tracked Deployment
	// a tracked Rollout references is not reported, not even once at the
	// start. Rollouts that cannot be listed cannot tell which, and do not
	// hold the Deployments back for long (listedOrFailing).
	var rollouts *startedWatch
	var afterRollouts cache.InformerSynced
	if d.served {
		w := a.watch.rollouts(ctx, a.kube, a.dyn, a.cfg.Namespace, a.cfg.Resync, a.deployList)
		rollouts, afterRollouts = &w, w.listedOrFailing
		a.mu.Lock()
		a.rolloutWatch = &w
		a.mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); a.followRollouts(ctx, log, w) }()
	}
	deployments := a.watch.deployments(ctx, a.kube, a.cfg.Namespace, a.cfg.Resync, afterRollouts, a.deployList)
	wg.Add(1)
	go func() { defer wg.Done(); a.followDeployments(ctx, log) }()
	log.Info("ripcord agent started", "agent", a.ID(), "server", a.cfg.Server, "namespace", cmpOr(a.cfg.Namespace, "(all)"),
		"rollouts", d.served, "resync", a.cfg.Resync, "spooled", a.deliver.spool.Len())
	// The Deployment watch starts once the Rollouts are listed or failing.
	if cache.WaitForCacheSync(ctx.Done(), deployments.synced) {
		a.watch.hold(deployments)
		rolloutsLater := rollouts != nil && !rollouts.synced()
		if !rolloutsLater && rollouts != nil {
			a.watch.hold(*rollouts)
		}
		a.mu.Lock()
		// Set with listed, so /healthz is never OK in between.
		a.rolloutsPending = rolloutsLater
		a.listed = true
		a.mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); a.sendInventories(ctx) }()
		if rolloutsLater {
			wg.Add(1)
			go func() { defer wg.Done(); a.joinRollouts(ctx, *rollouts) }()
		}
		if !d.served && a.cfg.Rollouts != RolloutsOff {
			wg.Add(1)
			go func() { defer wg.Done(); a.discoverRollouts(ctx, log, d) }()
		}
	}
	<-ctx.Done()
	wg.Wait()
	log.Info("ripcord agent stopped", "spooled", a.deliver.spool.Len())
	return nil
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

// healthz is 200 once the watches have listed every tracked workload, and,
// with --rollouts=on, once the Rollout watch runs; not while the Rollout
// watch cannot list them (rolloutsTrouble), at the start or later, nor
// the Deployment watch (deploymentsTrouble; while starting, the answer
// says why its lists fail); nor while deliveries to the server have
// failed for deliveryPatience (deliveryTrouble): the server cannot be
// reached, or it refuses the agent's token; nor while the polls for
// cluster actions have failed as long (pollTrouble), for an agent that
// cannot poll cannot roll back; nor while the API server forbids it a
// request its Lease needs (leaseLock), for it then waits for the Lease
// for ever and carries out no action.
// The chart asks /healthz for readiness only (liveness is a TCP check),
// so that restarts nothing, which would not help: the spool rides out the
// outage. It shows the operator an agent whose facts do not arrive, or
// that no rollback reaches, and why.
func (a *Agent) healthz(w http.ResponseWriter, _ *http.Request) {
	trouble := a.rolloutsTrouble()
	if d := a.deploymentsTrouble(); d != "" {
		trouble = strings.TrimSuffix(d+"; "+trouble, "; ")
	}
	lease := a.lease.trouble()
	delivery := a.deliver.deliveryTrouble()
	if poll := a.actions.pollTrouble(); poll != "" {
		delivery = strings.TrimPrefix(delivery+"; "+poll, "; ")
	}
	a.mu.Lock()
	listed, waitingFor, id := a.listed, a.waitingFor, a.id
	a.mu.Unlock()
	body := map[string]any{"status": "ok", "agent": id, "cluster": a.cfg.Cluster,
		"spooled": a.deliver.spool.Len(), "last_delivery_error": "", "last_poll_error": ""}
	if err, since, _ := a.deliver.deliveryState(); err != nil {
		body["last_delivery_error"], body["last_delivery_error_since"] = err.Error(), since.UTC().Format(time.RFC3339)
	}
	if err, since, _ := a.actions.pollState(); err != nil {
		body["last_poll_error"], body["last_poll_error_since"] = err.Error(), since.UTC().Format(time.RFC3339)
	}
	status := http.StatusOK
	switch {
	case !listed:
		body["status"], status = "starting: the watches have not listed the tracked workloads yet", http.StatusServiceUnavailable
		if why := a.deploymentsStarting(); why != "" {
			body["status"] = body["status"].(string) + "; " + why
		}
	case trouble != "":
		body["status"], status = trouble, http.StatusServiceUnavailable
	case waitingFor != "":
		body["status"], status = waitingFor, http.StatusServiceUnavailable
	case lease != "":
		body["status"], status = lease, http.StatusServiceUnavailable
	case delivery != "":
		body["status"], status = delivery, http.StatusServiceUnavailable
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
