package app

import (
	"net/http"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A cluster's token vouches for that cluster only. Task facts through
// POST /api/v1/facts/{cluster} (a Task that deploys a cloud target from
// the cluster) may open and move releases of that cluster, but not move a
// release of another cluster, and not release an app's environment under
// another repository than the one it belongs to: the fact's repository is
// whatever the sender wrote, and a first release claims the app for it.
func TestAClusterTokenCannotMoveReleasesOutsideItsCluster(t *testing.T) {
	t.Parallel()
	ts, issuer := factServer(t, testdb.MigratedURL(t, "sqlite"), nil)
	us := map[string]any{"release_id": "us-1", "app": "checkout", "environment": "prod", "cluster": "prod-us",
		"repository": "acme/checkout", "image": imageV1}
	if code := ts.post(t, "/api/v1/releases", testToken, us, nil); code != http.StatusCreated {
		t.Fatalf("open us-1: %d", code)
	}
	task := func(release, repo, status string, run int) map[string]any {
		return map[string]any{"source": "task", "repository": repo, "workflow_run_id": run, "run_attempt": 1,
			"status": status, "app": "checkout", "environment": "prod", "version": "v1", "release_id": release,
			"observed_at": time.Now().UTC().Format(time.RFC3339Nano)}
	}
	var e apiError
	if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", task("us-1", "acme/checkout", "failed", 1), &e); code != http.StatusForbidden || e.Field != "release_id" {
		t.Errorf("prod-eu's token failing prod-us's release: %d %+v, want 403 on release_id", code, e)
	}
	// A release that names no cluster (a workflow deploy) is no cluster's.
	if code := ts.post(t, "/api/v1/facts", issuer.Token(t, nil), task("wf-1", "acme/checkout", "in_progress", 5), nil); code != http.StatusOK {
		t.Fatalf("open wf-1: %d", code)
	}
	if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", task("wf-1", "acme/checkout", "failed", 4), &e); code != http.StatusForbidden || e.Field != "release_id" {
		t.Errorf("prod-eu's token failing a release of no cluster: %d %+v, want 403 on release_id", code, e)
	}
	var rec struct{ State string }
	for id, want := range map[string]string{"us-1": "opened", "wf-1": "progressing"} {
		if ts.api(t, "/api/v1/releases/"+id, &rec); rec.State != want {
			t.Errorf("%s is %s, want %s: prod-eu's token moved it", id, rec.State, want)
		}
	}
	if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", task("eu-evil", "evil/repo", "success", 2), &e); code != http.StatusForbidden || e.Field != "app" {
		t.Errorf("a release of acme/checkout's app under evil/repo: %d %+v, want 403 on app", code, e)
	}
	if code := ts.api(t, "/api/v1/releases/eu-evil", &rec); code != http.StatusNotFound {
		t.Errorf("eu-evil was opened (%d, %s)", code, rec.State)
	}
	// The cluster's own releases, of the app's own repository, still work.
	var res struct{ Outcome, State string }
	if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", task("eu-1", "acme/checkout", "success", 3), &res); code != http.StatusOK || res.Outcome != "opened" || res.State != "healthy" {
		t.Errorf("a task fact of prod-eu's own release: %d %+v, want opened and healthy", code, res)
	}
}
