package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/version"
)

// runAgent is `ripcord agent`: it watches the cluster's tracked Deployments
// and Argo Rollouts, posts their facts to the server and carries out the
// actions the server queues for the cluster.
func runAgent(args []string) int {
	fs := newFlags("ripcord agent", "--cluster NAME [--server URL] (--token-file FILE | RIPCORD_CLUSTER_TOKEN) [flags]",
		"Runs beside a cluster's workloads (in the cluster, or with --kubeconfig): watches the Deployments and "+
			"Argo Rollouts labelled ripcord.dev/tracked=true, posts a fact to the server on each change of their "+
			"status, and carries out the rollbacks the server queues for the cluster, which it asks for with a "+
			"long poll (the server never reaches into the cluster). /healthz and /metrics are on --listen.",
		"ripcord agent --cluster prod-eu --server https://ripcord.example.com --token-file /var/run/ripcord/token",
		"ripcord agent --cluster dev --kubeconfig ~/.kube/config --namespace shop --rollouts off")
	name := fs.String("cluster", os.Getenv("RIPCORD_CLUSTER"), "this cluster's name in the server's clusters setting (env RIPCORD_CLUSTER)")
	server := fs.String("server", firstOf(os.Getenv("RIPCORD_SERVER"), "http://127.0.0.1:8080"), "ripcord server URL (env RIPCORD_SERVER)")
	tokenFile := fs.String("token-file", os.Getenv("RIPCORD_CLUSTER_TOKEN_FILE"), "file holding the cluster's token, read on every request (env RIPCORD_CLUSTER_TOKEN_FILE; or set RIPCORD_CLUSTER_TOKEN)")
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (env KUBECONFIG); empty uses the in-cluster service account")
	namespace := fs.String("namespace", "", "watch one namespace only, and be handed only the cluster's rollbacks of workloads there, so agents of one cluster in different namespaces never take each other's (default: all namespaces, and any of the cluster's rollbacks)")
	stateDir := fs.String("state-dir", firstOf(os.Getenv("RIPCORD_AGENT_STATE"), "ripcord-agent"), "folder for the fact spool and the action journal; keep it across restarts, and facts not yet sent survive a new pod only on a persistent volume (env RIPCORD_AGENT_STATE)")
	agentID := fs.String("agent-id", "", "the agent's id towards the server (default: made from --cluster and --namespace, the same for every pod of one deployment of the agent, so a new pod finishes or gives back the actions the one before it claimed); the agents of one id take turns through a Lease")
	leaseNamespace := fs.String("lease-namespace", "", "namespace of the agent's Lease (default: the pod's own namespace in a cluster, else --namespace, else default)")
	listen := fs.String("listen", ":9090", "address of /healthz and /metrics")
	resync := fs.Duration("resync", cluster.DefaultResync, "re-send every tracked workload's current state this often")
	spoolMax := fs.Int("spool-max", cluster.DefaultSpoolMax, "facts kept on disk while the server is unreachable; past it the oldest are dropped")
	pollWait := fs.Duration("poll-wait", 20*time.Second, "how long one long poll for actions waits on the server")
	rollouts := fs.String("rollouts", cluster.RolloutsAuto, "watch Argo Rollouts: auto (when the cluster serves them, looked for again at every resync, or within seconds after a failed discovery: Rollouts installed later need no restart), on (not ready until the cluster serves them; Deployments are watched meanwhile) or off")
	h := cluster.DefaultHealth()
	fs.IntVar(&h.Port, "health-port", h.Port, "port of the pods' health endpoint")
	fs.StringVar(&h.Path, "health-path", h.Path, "path of the pods' health endpoint")
	fs.IntVar(&h.MinHealthy, "min-healthy", h.MinHealthy, "pods that must answer healthy")
	fs.DurationVar(&h.RequestTimeout, "health-request-timeout", h.RequestTimeout, "timeout of one health request")
	fs.DurationVar(&h.Timeout, "health-timeout", h.Timeout, "timeout of the whole health verification")
	fs.DurationVar(&h.Interval, "health-interval", h.Interval, "pause between two health rounds")
	rolloutTimeout := fs.Duration("rollout-timeout", cluster.DefaultRolloutTimeout, "how long a rollback waits for its rollout")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if code, stop := parse(fs, args); stop {
		return code
	}
	if code, stop := noArgs(fs); stop {
		return code
	}
	if code, stop := notNegative(fs, "resync", "spool-max", "poll-wait", "min-healthy",
		"health-request-timeout", "health-timeout", "health-interval", "rollout-timeout"); stop {
		return code
	}
	if code, stop := flagRange(fs, "health-port", 0, 65535); stop {
		return code
	}
	if !validLogLevel(*logLevel) {
		fmt.Fprintf(os.Stderr, "ripcord agent: --log-level must be debug, info, warn or error, not %q\n", *logLevel)
		return 2
	}
	// A misspelt variable (RIPCORD_CLUSTER_TOKN in a pod spec) is said
	// first: it may be why what follows refuses to start.
	log := newLogger(*logLevel)
	// client-go's own lines (a failing list retried) in the agent's log,
	// repeats left out.
	cluster.LogClientGoTo(log)
	for _, u := range config.CheckEnv(os.Environ()) {
		log.Warn(u.String(), "variable", u.Name)
	}
	if problems := agentFlagProblems(fs, *name, *server, *rollouts, *listen); len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "ripcord agent: "+strings.Join(problems, "; "))
		return 2
	}
	fileFrom := "environment variable RIPCORD_CLUSTER_TOKEN_FILE"
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "token-file" {
			fileFrom = "flag --token-file"
		}
	})
	token, tokenFrom, err := agentToken(*tokenFile, fileFrom)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord agent:", err)
		return 2
	}
	rc, err := restConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord agent:", err)
		return 2
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord agent: kubernetes client:", err)
		return 2
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord agent: dynamic client:", err)
		return 2
	}
	agent, err := cluster.New(cluster.Config{Cluster: *name, Server: *server, Token: token, TokenFrom: tokenFrom, Namespace: *namespace,
		ID: *agentID, LeaseNamespace: firstOf(*leaseNamespace, podNamespace(*kubeconfig), *namespace),
		Resync: *resync, StateDir: *stateDir, SpoolMax: *spoolMax, PollWait: *pollWait, Rollouts: *rollouts,
		Health: h, RolloutTimeout: *rolloutTimeout, Log: log}, kube, dyn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord", err)
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ripcord agent: listen on %s: %v\n", *listen, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := agentServer(agent.Handler(), 0)
	go func() { _ = srv.Serve(ln) }()
	log.Info("starting ripcord agent", "version", version.String(), "listen", ln.Addr().String())
	err = agent.Run(ctx)
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	if err != nil {
		log.Error("agent stopped with an error", "err", err)
		return 1
	}
	return 0
}

// The agent server's timeouts, the server's (app/server.go): a client
// that sends a request slowly, or keeps an idle connection, is cut
// instead of holding a connection and a goroutine in the agent's pod.
const (
	agentReadHeaderTimeout = 10 * time.Second
	agentReadTimeout       = time.Minute
	agentIdleTimeout       = 2 * time.Minute
	// agentMaxHeaderBytes is the server's maxHeaderBytes: a probe or a
	// scrape sends a few hundred bytes of headers, not Go's 1 MiB.
	agentMaxHeaderBytes = 64 << 10
)

// agentServer is the agent's /healthz and /metrics server; readTimeout,
// when not 0, shortens its read timeouts (tests).
func agentServer(h http.Handler, readTimeout time.Duration) *http.Server {
	read := cmp.Or(readTimeout, agentReadTimeout)
	return &http.Server{Handler: h, ReadHeaderTimeout: min(agentReadHeaderTimeout, read),
		ReadTimeout: read, IdleTimeout: agentIdleTimeout, MaxHeaderBytes: agentMaxHeaderBytes}
}

// validLogLevel is whether level is one --log-level takes: slog read any
// other word as info, so `--log-level verbose` gave no debug lines and no
// word about why.
func validLogLevel(level string) bool {
	switch level {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

// agentFlagProblems checks, naming the flags, what the agent would
// otherwise refuse only once it had found a cluster to watch (a missing
// --cluster, an --rollouts or --server it does not take) or once it had
// connected to it (a --listen that is not host:port): run on a laptop,
// the first answer was "not in a cluster and no --kubeconfig", and fixing
// that brought the next problem.
func agentFlagProblems(fs *flag.FlagSet, name, server, rollouts, listen string) []string {
	from := func(flagName, env string) string {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == flagName })
		if given || env == "" || os.Getenv(env) == "" {
			return "--" + flagName
		}
		return "--" + flagName + " (from " + env + ")"
	}
	var problems []string
	if strings.TrimSpace(name) == "" {
		problems = append(problems, "--cluster is required (or set RIPCORD_CLUSTER): the cluster's name in the server's clusters setting")
	}
	if u, err := url.Parse(server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		problems = append(problems, fmt.Sprintf("%s %q is not an http(s) URL (for example https://ripcord.example.com)", from("server", "RIPCORD_SERVER"), server))
	}
	switch rollouts {
	case cluster.RolloutsAuto, cluster.RolloutsOn, cluster.RolloutsOff:
	default:
		problems = append(problems, fmt.Sprintf("--rollouts must be auto, on or off, not %q", rollouts))
	}
	if _, port, err := net.SplitHostPort(listen); err != nil || port == "" {
		problems = append(problems, fmt.Sprintf("--listen %q is not host:port (for example :9090 or 127.0.0.1:9090)", listen))
	}
	return problems
}

// agentToken reads the cluster token from --token-file on each request, or
// takes RIPCORD_CLUSTER_TOKEN, trimmed as the file is: a Secret made from
// a file (kubectl create secret --from-file) ends in a newline. fileFrom
// names what gave the file (the flag or RIPCORD_CLUSTER_TOKEN_FILE); from
// says where the token comes from, for the log line of a 401.
func agentToken(file, fileFrom string) (tok func() (string, error), from string, err error) {
	if file != "" {
		tok := cluster.TokenFile(file)
		if _, err := tok(); err != nil {
			// Named by RIPCORD_CLUSTER_TOKEN_FILE, left in a shell or a
			// unit file, the file was otherwise a mystery on the command
			// line that has no --token-file.
			return nil, "", fmt.Errorf("%w (the file given by %s)", err, fileFrom)
		}
		return tok, fmt.Sprintf("file %s given by %s", file, fileFrom), nil
	}
	switch toks := strings.Fields(os.Getenv("RIPCORD_CLUSTER_TOKEN")); len(toks) {
	case 0:
	case 1:
		return func() (string, error) { return toks[0], nil }, "environment variable RIPCORD_CLUSTER_TOKEN", nil
	default:
		return nil, "", fmt.Errorf("RIPCORD_CLUSTER_TOKEN holds %d words; it must hold one token", len(toks))
	}
	return nil, "", errors.New("no token: pass --token-file or set RIPCORD_CLUSTER_TOKEN")
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podNamespace is the agent's own namespace when it runs in a pod (no
// --kubeconfig): where the chart grants it its Lease. "" elsewhere.
func podNamespace(kubeconfig string) string {
	if kubeconfig != "" {
		return ""
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// restConfig uses the kubeconfig when one is named, else the pod's service
// account.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return rc, nil
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("not in a cluster and no --kubeconfig: %w", err)
	}
	return rc, nil
}
