package gatesflow_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A pull request that promotes to prod the digest staging ran healthy is
// an ordinary promotion there (eligibility is per app, environment and
// cluster), and its content gate says so with the eligibility API's
// reason: where the digest was healthy. The gates read only prod's records
// and said the digest was not among prod's newest releases, which left the
// reviewer to guess why an image that ran fine is not a rollback target.
func TestContentGateSaysWhereElseTheDigestRanHealthyAsTheAPIDoes(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e, cs := startSast(t, dbURL, `      staging:
        cluster: staging-eu
        rollback:
          mode: pull-request
          file: deploy/staging.yaml
          fields: {image: image.repository, digest: image.digest}
`)
		for i, f := range []struct{ id, env, cluster, digest string }{
			{"prod-1", "prod", "prod-eu", digestA},
			{"staging-1", "staging", "staging-eu", digestB},
		} {
			e.Fact(map[string]any{"source": "task", "repository": repo, "workflow_run_id": 9100 + i, "run_attempt": 1,
				"status": "success", "app": "checkout", "environment": f.env, "cluster": f.cluster,
				"release_id": f.id, "images": []string{"reg.example.com/checkout@" + f.digest},
				"metadata":    map[string]string{"commit": fmt.Sprintf("%040x", 0xbeef00+i)},
				"observed_at": time.Now().UTC().Format(time.RFC3339Nano)})
		}
		cs.Analyzed(repo, "refs/heads/main")
		base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", release(digestA, 3))
		head := e.GitHub.PutFile(repo, "promote-checkout", "deploy/prod.yaml", release(digestB, 3))
		number := e.GitHub.OpenPullRequest(repo, "octocat", "promote-checkout", "main", "promote checkout")
		e.Deliver("pull_request", pullRequest(t, number, head, base, "promote-checkout"))
		e.WaitFor("the sast gate", 20*time.Second, func() bool { return len(completedRuns(e, head)) == 1 })
		cr := completedRuns(e, head)["ripcord/sast"]

		q := url.Values{"app": {"checkout"}, "environment": {"prod"}, "cluster": {"prod-eu"},
			"image": {"reg.example.com/checkout@" + digestB}}
		status, body := e.Do("GET", "/api/v1/eligibility?"+q.Encode(), "", nil)
		var api eligibility.Answer
		if err := json.Unmarshal(body, &api); status != 200 || err != nil {
			t.Fatalf("eligibility API: %d %s (%v)", status, body, err)
		}
		if api.Eligible || !strings.Contains(api.Reason, "was healthy in staging/staging-eu (release staging-1)") {
			t.Fatalf("the API's answer %+v does not say the digest was healthy in staging", api)
		}
		if cr.Conclusion != "failure" {
			t.Errorf("sast on an ordinary promotion whose revision is unknown: %s, want failure", cr.Conclusion)
		}
		if !strings.Contains(cr.Summary, "not an eligible rollback ("+api.Reason+")") {
			t.Errorf("the sast check run does not give the API's reason %q:\n%s", api.Reason, cr.Summary)
		}
	})
}
