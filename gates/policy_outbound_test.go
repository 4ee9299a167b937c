package gates

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/outbound"
)

// policy_validation.url is the repository's choice: it must not reach the
// cloud metadata service. The client is given explicitly so that the old
// code under this test sends nothing off loopback either.
func TestPolicyValidationRefusesTheMetadataService(t *testing.T) {
	g := PolicyValidation{URL: "http://169.254.169.254/latest/meta-data/", Timeout: 5 * time.Second, Client: outbound.Client(nil)}
	v := g.Evaluate(context.Background(), Subject{Environment: "prod"})
	const want = "the address 169.254.169.254 of process.policy_validation.url is link-local: ripcord does not call it"
	if v.Outcome != Error || !strings.Contains(v.Summary, want) {
		t.Errorf("got %s %q, want %s …%s…", v.Outcome, v.Summary, Error, want)
	}
}

// A redirect is the service's answer, not a way elsewhere: followed, the
// gate passed on the word of a URL the repository did not name.
func TestPolicyValidationFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			elsewhere.Add(1)
			_, _ = w.Write([]byte(`{"result":"pass","reason":"elsewhere says yes"}`))
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	v := PolicyValidation{URL: srv.URL + "/policy", Timeout: 5 * time.Second}.Evaluate(context.Background(), Subject{Environment: "prod"})
	const want = "answered HTTP 307, redirected to /elsewhere; ripcord follows no redirects for repository-chosen URLs"
	if v.Outcome != Error || !strings.Contains(v.Summary, want) || elsewhere.Load() != 0 {
		t.Errorf("got %s %q after %d requests to the redirect's target, want %s …%s… and none", v.Outcome, v.Summary, elsewhere.Load(), Error, want)
	}
}
