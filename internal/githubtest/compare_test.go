package githubtest

import (
	"context"
	"testing"

	"github.com/google/go-github/v66/github"
)

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
