package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// An app's environment belongs to the repository of its first release
// (README, POST /api/v1/facts): a workflow of another repository, although
// its OIDC token is valid and the App is installed there, cannot open
// releases of it, through task facts or POST /api/v1/releases.
func TestWorkflowOfAnotherRepositoryCannotOpenReleasesOfAnApp(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer := factServer(t, dbURL, nil)
		ts.install(t, "acme/payments")
		task := func(repo, app, release string) map[string]any {
			return map[string]any{"source": "task", "repository": repo, "workflow_run_id": 42, "run_attempt": 1,
				"status": "in_progress", "app": app, "environment": "prod", "cluster": "prod-eu", "version": "v1",
				"release_id": release, "observed_at": time.Now().UTC().Format(time.RFC3339)}
		}
		checkoutTok := issuer.Token(t, map[string]any{"repository": "acme/checkout"})
		paymentsTok := issuer.Token(t, map[string]any{"repository": "acme/payments"})

		if code := ts.post(t, "/api/v1/facts", checkoutTok, task("acme/checkout", "checkout", "co-1"), nil); code != http.StatusOK {
			t.Fatalf("acme/checkout's first release of checkout: status %d, want 200", code)
		}
		var refused struct{ Error, Field string }
		code := ts.post(t, "/api/v1/facts", paymentsTok, task("acme/payments", "checkout", "evil-1"), &refused)
		if code != http.StatusForbidden || refused.Field != "app" || !strings.Contains(refused.Error, "acme/checkout") {
			t.Errorf("acme/payments opening a release of checkout: %d %+v, want 403 on field app naming acme/checkout", code, refused)
		}
		refused = struct{ Error, Field string }{}
		code = ts.post(t, "/api/v1/releases", paymentsTok, map[string]any{"release_id": "evil-2", "app": "checkout",
			"environment": "prod", "cluster": "prod-eu", "repository": "acme/payments",
			"image": imageV1}, &refused)
		if code != http.StatusForbidden || refused.Field != "app" || !strings.Contains(refused.Error, "acme/checkout") {
			t.Errorf("acme/payments registering a release of checkout: %d %+v, want 403 on field app naming acme/checkout", code, refused)
		}
		for _, id := range []string{"evil-1", "evil-2"} {
			if code := ts.api(t, "/api/v1/releases/"+id, nil); code != http.StatusNotFound {
				t.Errorf("release %s: status %d, want 404 (never opened)", id, code)
			}
		}
		if code := ts.post(t, "/api/v1/facts", paymentsTok, task("acme/payments", "payments", "pay-1"), nil); code != http.StatusOK {
			t.Errorf("acme/payments' own app: status %d, want 200", code)
		}
		if code := ts.post(t, "/api/v1/facts", checkoutTok, task("acme/checkout", "checkout", "co-2"), nil); code != http.StatusOK {
			t.Errorf("acme/checkout's next release of checkout: status %d, want 200", code)
		}
	})
}
