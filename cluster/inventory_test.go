package cluster

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// The inventory comes after the facts spooled before it. The server turns
// a workload missing from the inventory into a deletion stamped with the
// inventory's time, and drops any fact of that workload observed earlier
// as stale: were the inventory to overtake the spool (an agent catching up
// after an outage), a workload deleted and created again under its name
// meanwhile would lose its new facts until the next resync.
func TestTheInventoryWaitsForTheFactsSpooledBeforeIt(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/facts/prod-eu":
			time.Sleep(200 * time.Millisecond) // a server busy catching up
			mu.Lock()
			got = append(got, "facts")
			mu.Unlock()
			_, _ = io.WriteString(w, `{"results":[]}`)
		case "/api/v1/facts/prod-eu/inventory":
			mu.Lock()
			got = append(got, "inventory")
			mu.Unlock()
			_, _ = io.WriteString(w, `{"deleted":[]}`)
		default: // the actions long poll
			select {
			case <-r.Context().Done():
			case <-time.After(200 * time.Millisecond):
			}
			_, _ = io.WriteString(w, `{"actions":[]}`)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	spool, err := OpenSpool(filepath.Join(dir, "spool"), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Left by the previous run, which stopped while the server was down.
	for i := range 3 {
		f, _ := DeploymentFact("prod-eu", deployment(), t0.Add(time.Duration(i)*time.Second))
		if _, err := spool.Append(f); err != nil {
			t.Fatal(err)
		}
	}
	a, err := New(Config{Cluster: "prod-eu", Server: srv.URL, Token: func() (string, error) { return "tok", nil },
		StateDir: dir, Resync: time.Hour, PollWait: 200 * time.Millisecond, Rollouts: RolloutsOff,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, fake.NewClientset(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		sent := slices.Contains(got, "inventory")
		mu.Unlock()
		if sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no inventory sent")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got[0] != "facts" || a.deliver.spool.Len() != 0 {
		t.Errorf("requests %v with %d facts still spooled; want the spooled facts delivered before the inventory", got, a.deliver.spool.Len())
	}
}
