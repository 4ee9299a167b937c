package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A workflow's OIDC token vouches for its own repository: a task fact that
// names a release of another repository is refused, and tells nothing of
// that release. Before, acme/payments' workflow, posting a fact of its own
// app that named checkout's release co-1, was answered "ignored" with
// co-1's state, and each such post wrote a fact_ignored event into co-1's
// timeline, which acme/checkout's people read.
func TestAWorkflowCannotReachAnotherRepositorysReleaseThroughAFact(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer := factServer(t, dbURL, nil)
		ts.install(t, "acme/payments")
		task := func(repo, app, release, status string) map[string]any {
			return map[string]any{"source": "task", "repository": repo, "workflow_run_id": 42, "run_attempt": 1,
				"status": status, "app": app, "environment": "prod", "cluster": "prod-eu", "version": "v1",
				"release_id": release, "observed_at": time.Now().UTC().Format(time.RFC3339)}
		}
		checkoutTok := issuer.Token(t, map[string]any{"repository": "acme/checkout"})
		paymentsTok := issuer.Token(t, map[string]any{"repository": "acme/payments"})
		if code := ts.post(t, "/api/v1/facts", checkoutTok, task("acme/checkout", "checkout", "co-1", "in_progress"), nil); code != http.StatusOK {
			t.Fatalf("acme/checkout's release co-1: status %d, want 200", code)
		}
		events := func() int {
			var n int
			if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM audit_events WHERE release_id = 'co-1'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := events()

		var answer struct{ Error, Field, Outcome, State, Reason string }
		code := ts.post(t, "/api/v1/facts", paymentsTok, task("acme/payments", "payments", "co-1", "failed"), &answer)
		if code != http.StatusForbidden || answer.Field != "release_id" {
			t.Errorf("acme/payments' fact naming co-1: %d %+v, want 403 on release_id", code, answer)
		}
		if answer.State != "" || strings.Contains(answer.Error+answer.Reason, "progressing") {
			t.Errorf("the answer tells acme/payments co-1's state: %+v", answer)
		}
		if n := events(); n != before {
			t.Errorf("co-1's timeline has %d events after acme/payments' fact, want %d (nothing of theirs)", n, before)
		}
		// The owner's own workflow is answered as before.
		if code := ts.post(t, "/api/v1/facts", checkoutTok, task("acme/checkout", "checkout", "co-1", "success"), &answer); code != http.StatusOK || answer.State != "healthy" {
			t.Errorf("acme/checkout's success for co-1: %d %+v, want 200 healthy", code, answer)
		}
	})
}

// The same holds for POST /api/v1/releases: before, a workflow of
// acme/payments that sent checkout's release id with its own app was
// answered 409 with what co-1 holds ("app: release co-1 exists with
// \"checkout\""), field after field.
func TestAWorkflowCannotReadAnotherRepositorysReleaseThroughAConflict(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer := factServer(t, dbURL, nil)
		ts.install(t, "acme/payments")
		release := func(repo, app string) map[string]any {
			return map[string]any{"release_id": "co-1", "app": app, "environment": "prod", "cluster": "prod-eu",
				"repository": repo, "image": imageV1}
		}
		checkoutTok := issuer.Token(t, map[string]any{"repository": "acme/checkout"})
		paymentsTok := issuer.Token(t, map[string]any{"repository": "acme/payments"})
		if code := ts.post(t, "/api/v1/releases", checkoutTok, release("acme/checkout", "checkout"), nil); code != http.StatusCreated {
			t.Fatalf("acme/checkout's release co-1: status %d, want 201", code)
		}
		var refused apiError
		code := ts.post(t, "/api/v1/releases", paymentsTok, release("acme/payments", "payments"), &refused)
		if code != http.StatusForbidden || refused.Field != "release_id" || strings.Contains(refused.Error, "checkout") {
			t.Errorf("acme/payments sending co-1: %d %+v, want 403 on release_id that tells nothing of co-1", code, refused)
		}
		// The owner's own workflow still hears which field differs.
		refused = apiError{}
		other := release("acme/checkout", "checkout")
		other["image"] = "registry.example/shop/checkout:v2"
		if code := ts.post(t, "/api/v1/releases", checkoutTok, other, &refused); code != http.StatusConflict || refused.Field != "image" {
			t.Errorf("acme/checkout sending co-1 with another image: %d %+v, want 409 on image", code, refused)
		}
	})
}
