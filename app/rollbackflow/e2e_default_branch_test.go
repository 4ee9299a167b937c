package rollbackflow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A GitOps repository whose default branch is not main, with no
// rollback.base in the config: the pull request targets the default branch
// GitHub names, its commit sits on that branch's head, and its release file
// is that branch's, edited; main, which exists too with other content, is
// left alone.
func TestRollbackTargetsTheGitOpsDefaultBranchWhenTheConfigNamesNoBase(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", strings.Replace(repoConfig, "          base: main\n", "", 1))
		trunkYAML := strings.Replace(releaseYAML, "replicas: 3", "replicas: 5", 1)
		trunk := s.GitHub.PutFile(gitops, "trunk", releaseFile, trunkYAML)
		s.GitHub.SetDefaultBranch(gitops, "trunk")
		mainHead, _ := s.GitHub.Ref(gitops, "heads/main")

		status, out := s.Do("POST", "/api/v1/rollbacks", "application/json", []byte(`{"app":"checkout","environment":"prod","reason":"r3 leaks memory"}`))
		if status != 202 {
			t.Fatalf("POST /api/v1/rollbacks = %d %s", status, out)
		}
		var acc rollbackflow.Accepted
		if err := json.Unmarshal(out, &acc); err != nil {
			t.Fatal(err)
		}
		rec := s.waitRelease(acc.ReleaseID)
		s.Settle(jobKinds...)

		prs := s.GitHub.PullRequests(gitops)
		branch := "release-rollback-prod-" + sha(2)[:8]
		if len(prs) != 1 || prs[0].Base != "trunk" || prs[0].Head != branch || prs[0].Number != rec.PRNumber {
			t.Fatalf("pull requests = %+v, want one from %s into trunk", prs, branch)
		}
		head, _ := s.GitHub.Ref(gitops, "heads/"+branch)
		c, _ := s.GitHub.Commit(gitops, head)
		if len(c.Parents) != 1 || c.Parents[0] != trunk {
			t.Errorf("rollback commit parents = %v, want trunk's head %s", c.Parents, trunk)
		}
		file, _ := s.GitHub.FileAt(gitops, branch, releaseFile)
		if !strings.Contains(file, "replicas: 5") || !strings.Contains(file, "id: "+rec.ReleaseID) || !strings.Contains(file, "ref: "+image(2)) {
			t.Errorf("release file on %s is not trunk's, edited:\n%s", branch, file)
		}
		if now, _ := s.GitHub.Ref(gitops, "heads/main"); now != mainHead {
			t.Errorf("main moved from %s to %s", mainHead, now)
		}
	})
}
