package rollbackpr_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/rollbackpr"
)

// A person retargets the rollback pull request to another base (a release branch, say).
// GitHub lets one branch head a pull request into each base, so a retry that looked for
// the pull request into the configured base only would find none and open a second one
// from the same branch. It finds the retargeted one by its head and adopts it, as the
// person left it.
func TestOpenFindsItsPullRequestRetargetedToAnotherBase(t *testing.T) {
	s := githubtest.NewServer(t)
	s.SetClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
	s.PutFile(gitops, "main", releaseFile, releaseYAML)
	s.PutFile(gitops, "release-2026.11", releaseFile, releaseYAML)
	client := s.Client()
	gh := rollbackpr.NewGitHub(client)
	ctx := context.Background()

	first, err := rollbackpr.Open(ctx, gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	owner, repo := "acme", "gitops"
	if _, _, err := client.PullRequests.Edit(ctx, owner, repo, first.PullRequest, &github.PullRequest{
		Base: &github.PullRequestBranch{Ref: github.String("release-2026.11")},
	}); err != nil {
		t.Fatal(err)
	}

	again, err := rollbackpr.Open(ctx, gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	if again.PullRequest != first.PullRequest || again.PullRequestOutcome != rollbackpr.Reused {
		t.Errorf("asking again = %+v, want pull request #%d reused", again, first.PullRequest)
	}
	var open []githubtest.PullRequest
	for _, pr := range s.PullRequests(gitops) {
		if pr.State == "open" {
			open = append(open, pr)
		}
	}
	if len(open) != 1 || open[0].Base != "release-2026.11" {
		t.Errorf("open pull requests = %+v, want only #%d, into release-2026.11 as the person left it", open, first.PullRequest)
	}
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			t.Errorf("%s %s: %s", r.Method, r.Path, r.Invalid)
		}
	}
}
