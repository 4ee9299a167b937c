package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// `ripcord fact --source task` without --file is refused before any
// request, as its -h page says a task fact needs --file: it was sent, and
// the server's answer listed fields (repository, workflow_run_id, status,
// ...) that no flag of the command can give.
func TestFactTaskFromFlagsIsRefusedBeforeAnyRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, `{"error":"no request was expected"}`, http.StatusTeapot)
	}))
	defer srv.Close()
	env := []string{"RIPCORD_SERVER=" + srv.URL, "RIPCORD_CLUSTER_TOKEN=t"}
	code, _, stderr := ripcord(t, env, "fact", "--cluster", "prod-eu", "--source", "task", "--name", "checkout")
	if code != 2 || !strings.Contains(stderr, "ripcord fact: a task fact (--source task) needs --file") {
		t.Errorf("exit %d, stderr %q; want 2 and that a task fact needs --file", code, stderr)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server, want none", n)
	}
}
