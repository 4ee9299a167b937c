package gatesflow_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// policy_validation.url is the repository's choice, and outbound.allow is
// the server's limit on such URLs: a policy service outside it is not
// asked, and its gate fails closed saying why.
func TestPolicyServiceOutsideOutboundAllowIsNotAsked(t *testing.T) {
	t.Parallel()
	var asked atomic.Int64
	policy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		_, _ = w.Write([]byte(`{"result":"pass","reason":"allowed"}`))
	}))
	defer policy.Close()
	e := e2etest.StartWith(t, testdb.MigratedURL(t, "sqlite"), app.Options{}, func(c *config.Config) {
		c.Outbound.Allow = []string{"10.0.0.0/8"}
	})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", policyGateConfig(policy.URL, "prod"))
	base, head, number := openBump(e, repo)
	e.Install(repo)
	e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
	e.WaitFor("the policy gate's verdict", 20*time.Second, func() bool {
		_, ok := completedRuns(e, head)["ripcord/policy-validation"]
		return ok
	})
	cr := completedRuns(e, head)["ripcord/policy-validation"]
	const want = "of process.policy_validation.url is not in the server's outbound.allow: ripcord does not call it"
	if cr.Conclusion != "failure" || !strings.Contains(cr.Title+"\n"+cr.Summary, want) || asked.Load() != 0 {
		t.Errorf("ripcord/policy-validation: %s %q %q after %d requests to the service; want a failure saying …%s… and none",
			cr.Conclusion, cr.Title, cr.Summary, asked.Load(), want)
	}
}
