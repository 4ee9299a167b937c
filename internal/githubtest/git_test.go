package githubtest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

// A rollback branch made as ripcord makes it — blob, tree on a base, commit, ref — reads
// back through the test accessors and through the API.
func TestBranchAndCommitThroughTheGitDataAPI(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	const repo, file = "acme/gitops", "apps/checkout/prod/release.yaml"
	base := s.PutFile(repo, "main", file, "image: shop:v2 # current\n")
	s.PutFile(repo, "main", "README.md", "gitops\n")

	ref, _, err := client.Git.GetRef(ctx, "acme", "gitops", "heads/main")
	if err != nil {
		t.Fatal(err)
	}
	head := ref.GetObject().GetSHA()
	parent, _, err := client.Git.GetCommit(ctx, "acme", "gitops", head)
	if err != nil {
		t.Fatal(err)
	}
	if got := parent.Parents[0].GetSHA(); got != base {
		t.Errorf("main's head has parent %s, want the first PutFile's %s", got, base)
	}
	tree, _, err := client.Git.CreateTree(ctx, "acme", "gitops", parent.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String(file), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("image: shop:v1 # current\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	message := "Rollback: checkout prod to v1\n\nRipcord-Release-Kind: rollback\nRipcord-Rollback-Of: rel-42\n"
	commit, _, err := client.Git.CreateCommit(ctx, "acme", "gitops", &github.Commit{
		Message: github.String(message), Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: github.String(head)}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	branch := "release-rollback-prod-0123abcd"
	if _, _, err := client.Git.CreateRef(ctx, "acme", "gitops", &github.Reference{
		Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA},
	}); err != nil {
		t.Fatal(err)
	}

	if got, _ := s.Ref(repo, branch); got != commit.GetSHA() {
		t.Errorf("Ref(%s) = %s, want %s", branch, got, commit.GetSHA())
	}
	if got, _ := s.FileAt(repo, branch, file); got != "image: shop:v1 # current\n" {
		t.Errorf("FileAt(branch) = %q", got)
	}
	if got, _ := s.FileAt(repo, branch, "README.md"); got != "gitops\n" {
		t.Errorf("the base tree's other file was lost: %q", got)
	}
	if got, _ := s.FileAt(repo, "main", file); got != "image: shop:v2 # current\n" {
		t.Errorf("main changed: %q", got)
	}
	c, ok := s.Commit(repo, commit.GetSHA())
	if !ok || c.Message != message || len(c.Parents) != 1 || c.Parents[0] != head {
		t.Errorf("Commit = %+v, %v", c, ok)
	}
	content, _, _, err := client.Repositories.GetContents(ctx, "acme", "gitops", file, &github.RepositoryContentGetOptions{Ref: branch})
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := content.GetContent(); text != "image: shop:v1 # current\n" {
		t.Errorf("contents API gives %q", text)
	}
}

func TestRefUpdates(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	first := s.PutFile("acme/shop", "main", "a", "1")
	second := s.PutFile("acme/shop", "main", "a", "2")
	if _, _, err := client.Git.CreateRef(ctx, "acme", "shop", &github.Reference{
		Ref: github.String("refs/heads/feature/x"), Object: &github.GitObject{SHA: github.String(second)},
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		sha        string
		force      bool
		wantStatus int
	}{
		{"moving a branch back is not a fast forward", first, false, http.StatusUnprocessableEntity},
		{"forced, it moves back", first, true, http.StatusOK},
		{"forward again is a fast forward", second, false, http.StatusOK},
		{"to an object that does not exist", "0000000000000000000000000000000000000000", true, http.StatusUnprocessableEntity},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, resp, err := client.Git.UpdateRef(ctx, "acme", "shop", &github.Reference{
				Ref: github.String("heads/feature/x"), Object: &github.GitObject{SHA: github.String(c.sha)},
			}, c.force)
			if resp == nil || resp.StatusCode != c.wantStatus {
				t.Fatalf("status %v (err %v), want %d", resp, err, c.wantStatus)
			}
			if want := c.sha; err == nil {
				if got, _ := s.Ref("acme/shop", "heads/feature/x"); got != want {
					t.Errorf("ref at %s, want %s", got, want)
				}
			}
		})
	}
	_, _, err := client.Git.CreateRef(ctx, "acme", "shop", &github.Reference{
		Ref: github.String("refs/heads/feature/x"), Object: &github.GitObject{SHA: github.String(second)},
	})
	var er *github.ErrorResponse
	if !errors.As(err, &er) || !strings.Contains(er.Message, "Reference already exists") {
		t.Errorf("creating an existing ref: %v", err)
	}
	if _, err := client.Git.DeleteRef(ctx, "acme", "shop", "heads/feature/x"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Ref("acme/shop", "feature/x"); ok {
		t.Errorf("deleted ref still there")
	}
}

func TestTreeEntryWithNullSHADeletesThePath(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	s.PutFile("acme/shop", "main", "keep.txt", "k")
	head := s.PutFile("acme/shop", "main", "dir/gone.txt", "g")
	c, _ := s.Commit("acme/shop", head)
	tree, _, err := client.Git.CreateTree(ctx, "acme", "shop", c.Tree, []*github.TreeEntry{
		{Path: github.String("dir/gone.txt"), Mode: github.String("100644"), Type: github.String("blob")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Entries) != 1 || tree.Entries[0].GetPath() != "keep.txt" {
		t.Errorf("tree after deleting dir/gone.txt: %+v", tree.Entries)
	}
}

// The fake names objects as git does; the real git binary must agree.
func TestObjectIDsAreGits(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs the git binary: not on PATH")
	}
	s := NewServer(t)
	when := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return when })
	sha := s.PutFile("acme/shop", "main", "deploy/release.yaml", "image: shop:v1\n")
	c, _ := s.Commit("acme/shop", sha)

	dir := t.TempDir()
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(),
			"GIT_AUTHOR_NAME="+BotLogin, "GIT_AUTHOR_EMAIL="+BotLogin+"@users.noreply.github.com",
			"GIT_COMMITTER_NAME="+BotLogin, "GIT_COMMITTER_EMAIL="+BotLogin+"@users.noreply.github.com",
			"GIT_AUTHOR_DATE=1740830400 +0000", "GIT_COMMITTER_DATE=1740830400 +0000")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("", "init", "-q", ".")
	if err := os.WriteFile(filepath.Join(dir, "release.yaml"), []byte("image: shop:v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blob := run("", "hash-object", "-w", "release.yaml")
	sub := run("100644 blob "+blob+"\trelease.yaml\n", "mktree")
	root := run("040000 tree "+sub+"\tdeploy\n", "mktree")
	if root != c.Tree {
		t.Errorf("tree %s, git says %s", c.Tree, root)
	}
	if got := run(c.Message, "commit-tree", root); got != sha {
		t.Errorf("commit %s, git says %s", sha, got)
	}
}

// A branch made from an older commit of main, with two commits of its own, compared
// with main as it is now: the branch's two commits, oldest first, the branch point as
// the merge base, and main one commit ahead of it.
func TestCompareListsWhatHeadHasThatBaseDoesNot(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	const repo = "acme/gitops"
	point := s.PutFile(repo, "main", "a.txt", "1\n")
	if _, _, err := client.Git.CreateRef(ctx, "acme", "gitops", &github.Reference{
		Ref: github.String("refs/heads/topic"), Object: &github.GitObject{SHA: github.String(point)},
	}); err != nil {
		t.Fatal(err)
	}
	moved := s.PutFile(repo, "main", "a.txt", "2\n")
	first := s.PutFile(repo, "topic", "b.txt", "1\n")
	second := s.PutFile(repo, "topic", "b.txt", "2\n")

	cmp, _, err := client.Repositories.CompareCommits(ctx, "acme", "gitops", moved, "topic", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmp.Commits {
		got = append(got, c.GetSHA())
	}
	if len(got) != 2 || got[0] != first || got[1] != second || cmp.GetTotalCommits() != 2 {
		t.Errorf("commits = %v (total %d), want [%s %s]", got, cmp.GetTotalCommits(), first, second)
	}
	if cmp.GetStatus() != "diverged" || cmp.GetAheadBy() != 2 || cmp.GetBehindBy() != 1 {
		t.Errorf("status %s, ahead %d, behind %d; want diverged, 2, 1", cmp.GetStatus(), cmp.GetAheadBy(), cmp.GetBehindBy())
	}
	if mb := cmp.GetMergeBaseCommit().GetSHA(); mb != point {
		t.Errorf("merge base = %s, want the branch point %s", mb, point)
	}
	if len(cmp.Commits) == 2 && cmp.Commits[1].Parents[0].GetSHA() != first {
		t.Errorf("the newest commit's parents = %v, want %s", cmp.Commits[1].Parents, first)
	}

	same, _, err := client.Repositories.CompareCommits(ctx, "acme", "gitops", "main", moved, nil)
	if err != nil {
		t.Fatal(err)
	}
	if same.GetStatus() != "identical" || len(same.Commits) != 0 {
		t.Errorf("main compared with its head: %s with %d commits, want identical with none", same.GetStatus(), len(same.Commits))
	}
	if _, _, err := client.Repositories.CompareCommits(ctx, "acme", "gitops", "main", "nowhere", nil); err == nil {
		t.Error("comparing with an unknown branch succeeded, want 404")
	}
}
