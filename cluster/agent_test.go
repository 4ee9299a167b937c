package cluster

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// The health check asks pods by their IP, inside the cluster: never
// through the HTTP proxy the agent's environment may name (HTTP_PROXY is
// common in clusters behind a corporate proxy, for the way out to the
// ripcord server), which cannot reach pod IPs and would fail every check,
// and so every rollback.
func TestTheHealthCheckReachesPodsDirectlyNotThroughAProxy(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Cluster: "prod-eu", Server: "http://127.0.0.1:1", Token: func() (string, error) { return "tok", nil },
		StateDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, fake.NewClientset(), nil)
	if err != nil {
		t.Fatal(err)
	}
	client := a.actions.roll.httpClient()
	tr, ok := client.Transport.(*http.Transport)
	if !ok || tr == http.DefaultTransport {
		t.Fatalf("the health check uses %T (the default transport, which takes HTTP_PROXY from the environment)", client.Transport)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://10.244.1.7:8080/health", nil)
	if tr.Proxy != nil {
		if u, err := tr.Proxy(req); u != nil || err != nil {
			t.Errorf("a pod's health is asked through proxy %v (%v)", u, err)
		}
	}
}
