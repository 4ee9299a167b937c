package app

import (
	"net/http"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// Freezes restrain what the repository's workflows deploy, so a workflow's
// own OIDC token cannot lift one for its release: freeze_override takes the
// api_token (or ripcord rollout start --freeze-override), which the
// rollout's audit records. Before, any workflow of the repository, on any
// branch, opened a release with freeze_override and its rollout went
// through every freeze window.
func TestAWorkflowTokenCannotOverrideFreezes(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer := factServer(t, dbURL, nil)
		release := func(id string) map[string]any {
			return map[string]any{"release_id": id, "app": "checkout", "environment": "prod", "cluster": "prod-eu",
				"repository": "acme/checkout", "image": imageV1, "freeze_override": true}
		}
		var refused apiError
		code := ts.post(t, "/api/v1/releases", issuer.Token(t, nil), release("frozen-wf"), &refused)
		if code != http.StatusForbidden || refused.Field != "freeze_override" {
			t.Errorf("a workflow's release with freeze_override: %d %+v, want 403 on freeze_override", code, refused)
		}
		if code := ts.api(t, "/api/v1/releases/frozen-wf", nil); code != http.StatusNotFound {
			t.Errorf("release frozen-wf: status %d, want 404 (never opened)", code)
		}
		if code := ts.post(t, "/api/v1/releases", testToken, release("frozen-api"), nil); code != http.StatusCreated {
			t.Errorf("the api_token's release with freeze_override: status %d, want 201", code)
		}
	})
}
