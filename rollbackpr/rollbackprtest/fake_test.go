package rollbackprtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/ripcord/ripcord/rollbackpr"
)

// These pin the GitHub behaviours the rollback flow's tests rely on, so a change to the
// fake that makes it kinder than GitHub shows up here.

func TestFakeBehavesLikeGitHub(t *testing.T) {
	ctx := context.Background()
	f := New()
	base := f.Push("acme/gitops", "main", "init", map[string]string{"a.yaml": "a: 1\n"})
	ref := func(name, sha string) *github.Reference {
		return &github.Reference{Ref: github.String(name), Object: &github.GitObject{SHA: github.String(sha)}}
	}

	if _, err := f.CreateRef(ctx, "acme", "gitops", ref("refs/heads/main", base)); !errors.Is(err, rollbackpr.ErrAlreadyExists) {
		t.Errorf("creating an existing ref: err = %v, want ErrAlreadyExists", err)
	}
	if _, err := f.GetRef(ctx, "acme", "gitops", "heads/nope"); !errors.Is(err, rollbackpr.ErrNotFound) {
		t.Errorf("reading a missing ref: err = %v, want ErrNotFound", err)
	}
	if _, err := f.CreateRef(ctx, "acme", "gitops", ref("refs/heads/rb", base)); err != nil {
		t.Fatal(err)
	}
	newPR := &github.NewPullRequest{Title: github.String("t"), Head: github.String("rb"), Base: github.String("main")}
	if _, err := f.CreatePullRequest(ctx, "acme", "gitops", newPR); err == nil || !strings.Contains(err.Error(), "No commits between") {
		t.Errorf("a pull request with no commits: err = %v, want No commits between", err)
	}

	c, err := f.GetCommit(ctx, "acme", "gitops", "main")
	if err != nil {
		t.Fatal(err)
	}
	blob, err := f.CreateBlob(ctx, "acme", "gitops", []byte("a: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	entries := []*github.TreeEntry{{Path: github.String("a.yaml"), Mode: github.String("100644"), Type: github.String("blob"), SHA: github.String(blob)}}
	if _, err := f.CreateTree(ctx, "acme", "gitops", base, entries); !errors.Is(err, rollbackpr.ErrRejected) {
		t.Errorf("a commit sha as base_tree: err = %v, want ErrRejected", err)
	}
	tree, err := f.CreateTree(ctx, "acme", "gitops", c.GetCommit().GetTree().GetSHA(), entries)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(parent string) (*github.Commit, error) {
		return f.CreateCommit(ctx, "acme", "gitops", &github.Commit{Message: github.String("m"), Tree: tree, Parents: []*github.Commit{{SHA: github.String(parent)}}})
	}
	if _, err := commit("0123456789012345678901234567890123456789"); !errors.Is(err, rollbackpr.ErrRejected) {
		t.Errorf("an unknown parent: err = %v, want ErrRejected", err)
	}
	next, err := commit(base)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.File("acme/gitops", next.GetSHA(), "a.yaml"); string(got) != "a: 2\n" {
		t.Errorf("the new commit holds a.yaml = %q", got)
	}
	if _, ok := f.Branch("acme/gitops", "rb"); !ok {
		t.Fatal("branch rb vanished")
	}
	if _, err := f.UpdateRef(ctx, "acme", "gitops", ref("refs/heads/rb", next.GetSHA()), false); err != nil {
		t.Fatalf("a fast-forward: %v", err)
	}
	if _, err := f.UpdateRef(ctx, "acme", "gitops", ref("refs/heads/rb", base), false); err == nil {
		t.Error("a non-fast-forward update without force was accepted")
	}

	pr, err := f.CreatePullRequest(ctx, "acme", "gitops", newPR)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreatePullRequest(ctx, "acme", "gitops", newPR); !errors.Is(err, rollbackpr.ErrAlreadyExists) {
		t.Errorf("a second pull request for the same head: err = %v, want ErrAlreadyExists", err)
	}
	f.DeleteBranch("acme/gitops", "rb")
	if got := f.PullRequests("acme/gitops")[0]; got.Number != pr.GetNumber() || got.State != "closed" {
		t.Errorf("after deleting its head branch the pull request is %+v, want closed", got)
	}
	if found, err := f.FindPullRequest(ctx, "acme", "gitops", "rb", "main"); err != nil || found != nil {
		t.Errorf("FindPullRequest found a closed pull request: %v, %v", found, err)
	}
}

func TestFakeCommitListsChangedFiles(t *testing.T) {
	f := New()
	f.Push("acme/gitops", "main", "init", map[string]string{"a.yaml": "a\n", "b.yaml": "b\n"})
	head := f.Push("acme/gitops", "main", "change a", map[string]string{"a.yaml": "hello\n"})
	c, err := f.GetCommit(context.Background(), "acme", "gitops", head)
	if err != nil {
		t.Fatal(err)
	}
	// ce0136… is git's own id for a blob holding "hello\n".
	if len(c.Files) != 1 || c.Files[0].GetFilename() != "a.yaml" || c.Files[0].GetSHA() != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Errorf("files = %v, want only a.yaml with git's blob id", c.Files)
	}
}

func TestFakeFailures(t *testing.T) {
	ctx := context.Background()
	f := New()
	base := f.Push("acme/gitops", "main", "init", map[string]string{"a.yaml": "a\n"})
	boom := errors.New("boom")
	ref := &github.Reference{Ref: github.String("refs/heads/x"), Object: &github.GitObject{SHA: github.String(base)}}

	f.Fail("CreateRef", boom)
	if _, err := f.CreateRef(ctx, "acme", "gitops", ref); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if _, ok := f.Branch("acme/gitops", "x"); ok {
		t.Error("Fail let the call take effect")
	}
	f.FailAfter("CreateRef", boom)
	if _, err := f.CreateRef(ctx, "acme", "gitops", ref); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if _, ok := f.Branch("acme/gitops", "x"); !ok {
		t.Error("FailAfter did not let the call take effect")
	}
	if got := f.Calls(); len(got) != 2 || got[0] != "CreateRef" {
		t.Errorf("calls = %v", got)
	}
}
