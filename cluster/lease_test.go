package cluster

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ripcord/ripcord/cluster/actionapi"
)

// A pod that replaces another (its emptyDir state folder lost) is the same
// agent towards the server: it asks for the claims of its predecessor.
// Another cluster or namespace is another agent; an id given is kept.
func TestAReplacementPodIsTheSameAgent(t *testing.T) {
	t.Parallel()
	id := func(cfg Config) string {
		t.Helper()
		cfg.Server, cfg.StateDir = "http://127.0.0.1:1", t.TempDir()
		cfg.Token = func() (string, error) { return "tok", nil }
		a, err := New(cfg, fake.NewSimpleClientset(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !actionIDPattern.MatchString(a.ID()) {
			t.Errorf("id %q is not one the server takes", a.ID())
		}
		return a.ID()
	}
	first := id(Config{Cluster: "prod-eu", Namespace: "shop"})
	if again := id(Config{Cluster: "prod-eu", Namespace: "shop"}); again != first {
		t.Errorf("the replacement pod is agent %s, its predecessor %s: the predecessor's claims wait out the claim timeout", again, first)
	}
	for what, cfg := range map[string]Config{
		"another namespace":      {Cluster: "prod-eu", Namespace: "billing"},
		"every namespace":        {Cluster: "prod-eu"},
		"another cluster":        {Cluster: "prod-us", Namespace: "shop"},
		"a cluster alike once -": {Cluster: "prod.eu", Namespace: "shop"},
	} {
		if other := id(cfg); other == first {
			t.Errorf("%s is agent %s too", what, other)
		}
	}
	if got := id(Config{Cluster: "prod-eu", ID: "edge_1"}); got != "edge_1" {
		t.Errorf("given id edge_1, the agent is %s", got)
	}
	if _, err := New(Config{Cluster: "prod-eu", ID: "edge 1", Server: "http://127.0.0.1:1", StateDir: t.TempDir(),
		Token: func() (string, error) { return "tok", nil }}, fake.NewSimpleClientset(), nil); err == nil {
		t.Error("an id the server refuses was taken")
	}
	if name := leaseName("Prod_EU-shop-"); len(name) > 63 || name != leaseName("Prod_EU-shop-") || name == leaseName("prod-eu-shop-") {
		t.Errorf("lease name %q: want a DNS label, the same for one id, another for another", name)
	}
}

// An agent whose RBAC predates the Lease may not read it: it carries out
// actions as it did before, with a random id kept in its state folder,
// never with the shared id that another process could hold at once.
func TestAnAgentThatMayNotReadItsLeaseTakesAnIDOfItsOwn(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var polledAs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			mu.Lock()
			polledAs = append(polledAs, r.URL.Query().Get("agent"))
			mu.Unlock()
			_ = json.NewEncoder(w).Encode(actionapi.Actions{Actions: []actionapi.Action{}})
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "x", nil)
	})
	dir := t.TempDir()
	a, err := New(Config{Cluster: "prod-eu", Server: srv.URL, Token: func() (string, error) { return "tok", nil }, StateDir: dir,
		Rollouts: RolloutsOff, PollWait: 200 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	shared := a.ID()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	var first string
	for deadline := time.Now().Add(10 * time.Second); first == ""; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		if len(polledAs) > 0 {
			first = polledAs[0]
		}
		mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the agent never polled for actions")
		}
	}
	kept, err := os.ReadFile(filepath.Join(dir, "agent-id"))
	if err != nil {
		t.Fatalf("no id kept in the state folder: %v", err)
	}
	if first == shared || first != strings.TrimSpace(string(kept)) || a.ID() != first {
		t.Errorf("polled as %s, the agent says %s; want the id kept in the state folder, %s, not the shared %s",
			first, a.ID(), strings.TrimSpace(string(kept)), shared)
	}
}
