package rollbackpr_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/rollbackpr"
)

// An older rollback to the same target was merged into main long ago (main fast-forwarded
// to its rollback commit), and main moved on. A person then made the rollback's branch
// from main as it was, pushed a commit of their own and opened a pull request; main moved
// on again. The branch holds no rollback commit: its own commits end at the branch point,
// and the older rollback commit under it is main's, not the branch's. Open must not take
// that one for this branch's rollback and adopt the pull request with a commit "made by
// hand" on top of it: it replaces the branch with this rollback on main's head, as for any
// branch without a rollback commit.
func TestOpenDoesNotTakeTheBasesOlderRollbackForTheBranchs(t *testing.T) {
	s := githubtest.NewServer(t)
	s.SetClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
	s.PutFile(gitops, "main", releaseFile, releaseYAML)
	client := s.Client()
	gh := rollbackpr.NewGitHub(client)
	ctx := context.Background()

	old, err := rollbackpr.Open(ctx, gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	// Merged by fast-forward: the older rollback commit is on main's first parents.
	mustDo(t, func() error {
		_, _, err := client.Git.UpdateRef(ctx, "acme", "gitops", &github.Reference{Ref: github.String("refs/heads/main"),
			Object: &github.GitObject{SHA: github.String(old.Commit)}}, false)
		return err
	})
	mustDo(t, func() error {
		_, _, err := client.PullRequests.Edit(ctx, "acme", "gitops", old.PullRequest, &github.PullRequest{State: github.String("closed")})
		return err
	})
	mustDo(t, func() error { _, err := client.Git.DeleteRef(ctx, "acme", "gitops", "heads/"+branch); return err })
	// A newer release deployed since: the release file is as it was before the rollback.
	point := s.PutFile(gitops, "main", releaseFile, releaseYAML)

	mustDo(t, func() error {
		_, _, err := client.Git.CreateRef(ctx, "acme", "gitops", &github.Reference{Ref: github.String("refs/heads/" + branch),
			Object: &github.GitObject{SHA: github.String(point)}})
		return err
	})
	byHand := s.PutFile(gitops, branch, "apps/checkout/prod/NOTES.md", "pinned by hand\n")
	s.OpenPullRequest(gitops, "octocat", branch, "main", "Rollback: checkout prod to 1a2b3c4d")
	base := s.PutFile(gitops, "main", "apps/checkout/staging.yaml", "image: {digest: sha256:0}\n")

	res, err := rollbackpr.Open(ctx, gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			t.Errorf("%s %s: %s", r.Method, r.Path, r.Invalid)
		}
	}
	if res.HandCommits != 0 || res.Commit == old.Commit {
		t.Errorf("result = %+v; want no commits made by hand on %s, the older rollback main merged", res, rollbackpr.ShortSHA(old.Commit))
	}
	head, _ := s.Ref(gitops, "heads/"+branch)
	c, _ := s.Commit(gitops, head)
	if head == byHand || head != res.Commit || !reflect.DeepEqual(c.Parents, []string{base}) {
		t.Errorf("branch head %s (parents %v), result commit %s; want this rollback's commit on main's head %s",
			head, c.Parents, res.Commit, base)
	}
	if got, _ := s.FileAt(gitops, branch, releaseFile); got != rolledBackYAML {
		t.Errorf("release file on %s:\n%s\nwant:\n%s", branch, got, rolledBackYAML)
	}
}

func mustDo(t *testing.T, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
}
