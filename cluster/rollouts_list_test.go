package cluster_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/records"
)

// testListPatience is the agents' ListPatience in the tests of failing
// lists: what they show does not depend on the 30 s of production, which
// would only make each of them wait that long.
const testListPatience = 5 * time.Second

// failingRollouts is a loopback proxy in front of the API server that
// answers every request for the Rollouts of shop with a 500, as an API
// server whose Rollout CRD's conversion webhook is down does, until fix
// is called.
type failingRollouts struct {
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	fixed bool
}

func (f *failingRollouts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	fail := !f.fixed && r.URL.Path == "/apis/argoproj.io/v1alpha1/namespaces/shop/rollouts"
	f.mu.Unlock()
	if fail {
		writeInternalError(w, `conversion webhook for argoproj.io/v1beta1, Kind=Rollout failed: Post "https://argo-rollouts-webhook.argo-rollouts.svc:443/convert?timeout=30s": service "argo-rollouts-webhook" not found`)
		return
	}
	f.proxy.ServeHTTP(w, r)
}

func (f *failingRollouts) fix() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fixed = true
}

// failingRolloutsClient is a client of k whose requests for the Rollouts
// of shop fail until fix.
func failingRolloutsClient(t *testing.T, k *k8stest.Cluster) (dynamic.Interface, *failingRollouts) {
	t.Helper()
	f := &failingRollouts{proxy: apiServerProxy(t, k)}
	dyn, err := dynamic.NewForConfig(serveAPI(t, f))
	if err != nil {
		t.Fatal(err)
	}
	return dyn, f
}

// A cluster that serves Argo Rollouts but cannot list them (an error other
// than forbidden, here a 500) does not keep the Deployments from being
// reported: after a bounded wait they are watched, reported and
// inventoried; /healthz answers 503 and, like the log, names the error;
// once the Rollouts list, their watch joins, without a restart, and the
// agent is ready.
func TestRolloutsThatFailToListDoNotHoldBackTheDeploymentsForever(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	k.InstallRolloutCRD()
	createRollout(t, k, "checkout", templateSpec("ghcr.io/acme/checkout:v2"), nil)
	d := trackedDeployment("shop", "cart", "ghcr.io/acme/cart:v1", "c1:prod-eu/prod")
	if _, err := k.Kube.AppsV1().Deployments("shop").Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, rollouts := failingRolloutsClient(t, k)
	sink := &factSink{}
	logs := &syncBuffer{}
	a := startAgent(t, sink, cluster.Config{Rollouts: cluster.RolloutsAuto, Resync: time.Hour, Namespace: "shop", ListPatience: testListPatience,
		Log: slog.New(slog.NewTextHandler(logs, nil))}, k.Kube, dyn)
	health := httptest.NewServer(a.Handler())
	defer health.Close()

	// The agent waits testListPatience for a list to succeed.
	waitWithin(t, 90*time.Second, "a fact of the Deployment", func() bool { return len(sink.factsOf(records.SourceDeployment)) > 0 })
	checkDeploymentsAloneAndUnready(t, sink, health.URL, logs, "while the Rollouts cannot be listed", "cannot watch Argo Rollouts", "rollouts.argoproj.io/v1alpha1", "conversion webhook", "--rollouts=off")
	if got := sink.rolloutFacts(); len(got) > 0 {
		t.Fatalf("Rollout facts %v from an agent that cannot list them", got)
	}

	rollouts.fix()
	// The informer lists again with client-go's backoff, up to a minute.
	waitWithin(t, 90*time.Second, "a fact of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
	waitUntil(t, "/healthz to be OK", func() bool { code, _ := healthz(t, health.URL); return code == http.StatusOK })
	waitUntil(t, "an inventory covering Rollouts", func() bool { return slices.Contains(sink.lastInventory(), records.SourceRollout) })
}
