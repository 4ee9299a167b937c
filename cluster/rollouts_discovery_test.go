package cluster_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/records"
)

// factSink is the server's side of the agent's facts API, and an actions
// API that never has an action.
type factSink struct {
	mu          sync.Mutex
	facts       []records.Fact
	inventories [][]records.Source
	uids        [][]string // of each inventory
	// deleted, when set, is the server's answer to an inventory: the
	// workloads it reports deleted. Otherwise none.
	deleted func(sources []records.Source, uids []string) string
}

func (s *factSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/facts/prod-eu":
		var body struct{ Facts []records.Fact }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.facts = append(s.facts, body.Facts...)
		s.mu.Unlock()
		_, _ = io.WriteString(w, `{"results":[]}`)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/facts/prod-eu/inventory":
		var inv struct {
			Sources []records.Source
			UIDs    []string
		}
		if err := json.NewDecoder(r.Body).Decode(&inv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.inventories = append(s.inventories, inv.Sources)
		s.uids = append(s.uids, inv.UIDs)
		s.mu.Unlock()
		deleted := "[]"
		if s.deleted != nil {
			deleted = s.deleted(inv.Sources, inv.UIDs)
		}
		_, _ = io.WriteString(w, `{"deleted":`+deleted+`}`)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/clusters/prod-eu/actions":
		select { // a long poll with nothing to hand out
		case <-r.Context().Done():
		case <-time.After(200 * time.Millisecond):
		}
		_, _ = io.WriteString(w, `{"actions":[]}`)
	default:
		http.NotFound(w, r)
	}
}

func (s *factSink) rolloutFacts() []records.Fact { return s.factsOf(records.SourceRollout) }

func (s *factSink) factsOf(source records.Source) []records.Fact {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []records.Fact
	for _, f := range s.facts {
		if f.Source == source {
			out = append(out, f)
		}
	}
	return out
}

func (s *factSink) lastInventory() []records.Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inventories) == 0 {
		return nil
	}
	return s.inventories[len(s.inventories)-1]
}

// lastInventoryUIDs are the uids of the last inventory and its sources.
func (s *factSink) lastInventoryUIDs() ([]records.Source, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inventories) == 0 {
		return nil, nil
	}
	return s.inventories[len(s.inventories)-1], s.uids[len(s.uids)-1]
}

// With --rollouts=auto, Argo Rollouts installed after the agent started
// (its CRD appears later) are watched from the next resync on, without a
// restart: their facts are sent, and the inventory covers them once their
// watch has listed them.
func TestAgentWatchesRolloutsWhoseCRDIsInstalledAfterItStarted(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	sink := &factSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	a, err := cluster.New(cluster.Config{Cluster: "prod-eu", Server: srv.URL, Token: func() (string, error) { return "tok", nil },
		StateDir: t.TempDir(), Resync: time.Second, PollWait: 200 * time.Millisecond, MaxBackoff: time.Second,
		Rollouts: cluster.RolloutsAuto, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, k.Kube, k.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	waitUntil(t, "the first inventory", func() bool { return sink.lastInventory() != nil })
	if inv := sink.lastInventory(); slices.Contains(inv, records.SourceRollout) {
		t.Fatalf("inventory sources %v before any Rollout CRD exists", inv)
	}

	k.InstallRolloutCRD()
	ro := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "checkout", "namespace": "shop",
			"labels":      map[string]any{cluster.TrackedLabel: "true"},
			"annotations": map[string]any{cluster.ReleaseIDAnnotation: "c2:prod-eu/prod"}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "checkout", "image": "ghcr.io/acme/checkout:v2"}}}}},
	}}
	rollouts := k.Dynamic.Resource(k8stest.RolloutResource).Namespace("shop")
	created, err := rollouts.Create(ctx, ro, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = map[string]any{"phase": "Progressing", "observedGeneration": "1", "currentPodHash": "abc"}
	if _, err := rollouts.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a fact of the Rollout", func() bool { return len(sink.rolloutFacts()) > 0 })
	if f := sink.rolloutFacts()[0]; f.Name != "checkout" || f.Phase != records.PhaseProgressing || f.ReleaseID != "c2:prod-eu/prod" {
		t.Errorf("Rollout fact %+v, want shop/checkout Progressing for c2:prod-eu/prod", f)
	}
	waitUntil(t, "an inventory covering Rollouts", func() bool { return slices.Contains(sink.lastInventory(), records.SourceRollout) })
}

// waitUntil waits for cond up to a minute: what the tests wait for takes
// seconds here, and the bound is only how long a failure takes to show. A
// CI machine busy with the whole suite (two cores, -p 4, several API
// servers and the race detector) ran some packages ten times slower than a
// quiet one, and 30 s was met by tests that were not failing.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, time.Minute, what, cond)
}

func waitWithin(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
