package rollbackflow_test

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

// checkPullRequest checks what the flow left in the GitOps repository: one
// labelled pull request, its branch (valid for the real git), one commit on
// main's head whose trailers the real git reads back, and the release file.
func checkPullRequest(t *testing.T, s *scene, rec records.Record, reason string) {
	t.Helper()
	prs := s.GitHub.PullRequests(gitops)
	if len(prs) != 1 {
		t.Fatalf("pull requests in %s = %d, want 1", gitops, len(prs))
	}
	pr := prs[0]
	branch := "release-rollback-prod-" + sha(2)[:8]
	if pr.Head != branch || pr.Base != "main" || pr.Number != rec.PRNumber || pr.Title != "Rollback: checkout prod to "+sha(2)[:8] ||
		len(pr.Labels) != 1 || pr.Labels[0] != rollbackpr.Label {
		t.Errorf("pull request = %+v", pr)
	}
	for _, want := range []string{"r3:prod-eu/prod", rec.ReleaseID, "Eligible rollback target", "r2:prod-eu/prod", reason} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("pull request body lacks %q:\n%s", want, pr.Body)
		}
	}
	if out, err := git(t, "", "check-ref-format", "--branch", pr.Head); err != nil || strings.TrimSpace(out) != branch {
		t.Errorf("git check-ref-format --branch %s = %q, %v", pr.Head, out, err)
	}
	head, _ := s.GitHub.Ref(gitops, "heads/"+branch)
	main, _ := s.GitHub.Ref(gitops, "heads/main")
	c, _ := s.GitHub.Commit(gitops, head)
	if len(c.Parents) != 1 || c.Parents[0] != main {
		t.Errorf("branch head %s has parents %v, want one commit on main %s", head, c.Parents, main)
	}
	out, err := git(t, c.Message, "interpret-trailers", "--parse")
	if err != nil {
		t.Fatal(err)
	}
	want := "Ripcord-Release-Kind: rollback\nRipcord-Rollback-Of: r3:prod-eu/prod\nRipcord-Rollback-Reason: " + reason + "\n"
	if out != want {
		t.Errorf("git interpret-trailers --parse:\n%s\nwant:\n%s\ncommit message:\n%s", out, want, c.Message)
	}
	file, _ := s.GitHub.FileAt(gitops, branch, releaseFile)
	wantFile := strings.NewReplacer("id: r3:prod-eu/prod", "id: "+rec.ReleaseID,
		"ref: ghcr.io/acme/checkout:v3", "ref: "+image(2), "digest: "+digest(3), "digest: "+digest(2)).Replace(releaseYAML)
	if file != wantFile {
		t.Errorf("release file on %s:\n%s\nwant:\n%s", branch, file, wantFile)
	}
	t.Logf("branch %s, commit %s:\n%s\nrelease file:\n%s", branch, head, c.Message, file)
}
