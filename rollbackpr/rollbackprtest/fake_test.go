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

	_, blob, err := f.GetContents(ctx, "acme", "gitops", "a.yaml", "main")
	if err != nil {
		t.Fatal(err)
	}
	put := func(sha string) error {
		_, err := f.UpdateFile(ctx, "acme", "gitops", "a.yaml", &github.RepositoryContentFileOptions{
			Message: github.String("m"), Content: []byte("a: 2\n"), SHA: github.String(sha), Branch: github.String("rb")})
		return err
	}
	if err := put(blob); err != nil {
		t.Fatal(err)
	}
	if err := put(blob); !errors.Is(err, rollbackpr.ErrConflict) {
		t.Errorf("a stale blob sha: err = %v, want ErrConflict", err)
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
