package rollbackflow_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// twoEnvConfig is repoConfig with a staging environment besides prod,
// both rolled back by pull request in the GitOps repository.
const twoEnvConfig = repoConfig + `      staging:
        cluster: staging-eu
        workflows: [deploy.yml]
        rollback:
          mode: pull-request
          repository: acme/gitops
          base: main
          file: apps/checkout/staging/release.yaml
          fields: {image: image.ref, digest: image.digest, release_id: release.id}
`

// `/ripcord rollback` on a pull request of the app's repository that opened
// no release does not take the environment of a rollback whose pull request
// in the GitOps repository has the same number: that is another
// repository's pull request. Before, the comment on acme/checkout#1 rolled
// back staging, whose rollback is acme/gitops#1, instead of asking which
// environment (the config has two).
func TestRollbackCommandIgnoresAGitOpsPullRequestOfTheSameNumber(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", twoEnvConfig)
		s.GitHub.PutFile(gitops, "main", "apps/checkout/staging/release.yaml",
			strings.ReplaceAll(releaseYAML, "prod", "staging"))
		for i, status := range []string{"success", "failed"} {
			n := i + 1
			f := map[string]any{"source": "task", "repository": appRepo, "workflow_run_id": int64(8000 + n), "run_attempt": 1,
				"status": status, "app": "checkout", "environment": "staging", "cluster": "staging-eu",
				"release_id": fmt.Sprintf("s%d:staging-eu/staging", n), "images": []string{image(n)},
				"metadata": map[string]string{"commit": sha(n)}, "observed_at": time.Now().UTC().Format(time.RFC3339Nano)}
			if status == "failed" {
				f["failure_type"] = "deployment_failure"
			}
			s.Fact(f)
			time.Sleep(2 * time.Millisecond)
		}
		status, out := s.Do("POST", "/api/v1/rollbacks", "application/json",
			[]byte(`{"app":"checkout","environment":"staging","reason":"s2 failed"}`))
		var acc rollbackflow.Accepted
		if err := json.Unmarshal(out, &acc); status != 202 || err != nil {
			t.Fatalf("POST /api/v1/rollbacks = %d %s (%v)", status, out, err)
		}
		staging := s.waitRelease(acc.ReleaseID)
		s.Settle(jobKinds...)

		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		if pr != staging.PRNumber {
			t.Fatalf("app pull request #%d, staging rollback %s#%d: the test needs the same number", pr, gitops, staging.PRNumber)
		}
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		c := s.comment(pr, "octocat", "/ripcord rollback the canary is failing", false)
		s.WaitFor("the answer", wait, func() bool { return len(s.replies(c)) >= 1 })
		s.Settle(jobKinds...)
		got := s.replies(c)
		if len(got) != 1 || !strings.Contains(got[0], "say which release") {
			t.Errorf("replies = %q, want one asking which release: %s#%d opened no release", got, appRepo, pr)
		}
	})
}
