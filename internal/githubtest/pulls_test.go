package githubtest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
)

func TestPullRequestsOpenOncePerBranch(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	s.PutFile("acme/gitops", "main", "a", "1")
	s.PutFile("acme/gitops", "release-rollback-prod-0123abcd", "a", "0")
	newPR := &github.NewPullRequest{
		Title: github.String("Rollback: checkout prod"), Head: github.String("release-rollback-prod-0123abcd"),
		Base: github.String("main"), Body: github.String("why"),
	}
	pr, _, err := client.PullRequests.Create(ctx, "acme", "gitops", newPR)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := s.Ref("acme/gitops", "release-rollback-prod-0123abcd")
	if pr.GetNumber() != 1 || pr.GetHead().GetSHA() != head || pr.GetBase().GetRef() != "main" {
		t.Errorf("created %d head %s base %s", pr.GetNumber(), pr.GetHead().GetSHA(), pr.GetBase().GetRef())
	}

	_, _, err = client.PullRequests.Create(ctx, "acme", "gitops", newPR)
	var er *github.ErrorResponse
	if !errors.As(err, &er) || !strings.Contains(er.Message, "A pull request already exists") {
		t.Errorf("second open PR for the branch: %v", err)
	}
	_, _, err = client.PullRequests.Create(ctx, "acme", "gitops", &github.NewPullRequest{
		Title: github.String("x"), Head: github.String("no-such-branch"), Base: github.String("main"),
	})
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("PR from a missing branch: %v", err)
	}

	cases := []struct {
		name string
		opts github.PullRequestListOptions
		want int
	}{
		{"by owner:branch head", github.PullRequestListOptions{Head: "acme:release-rollback-prod-0123abcd"}, 1},
		{"by another head", github.PullRequestListOptions{Head: "acme:other"}, 0},
		{"by base", github.PullRequestListOptions{Base: "main"}, 1},
		{"closed ones", github.PullRequestListOptions{State: "closed"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			list, _, err := client.PullRequests.List(ctx, "acme", "gitops", &c.opts)
			if err != nil || len(list) != c.want {
				t.Errorf("%d pull requests (%v), want %d", len(list), err, c.want)
			}
		})
	}

	if _, _, err := client.PullRequests.Edit(ctx, "acme", "gitops", 1, &github.PullRequest{State: github.String("closed")}); err != nil {
		t.Fatal(err)
	}
	if prs := s.PullRequests("acme/gitops"); len(prs) != 1 || prs[0].State != "closed" {
		t.Errorf("PullRequests = %+v", prs)
	}
	if _, _, err := client.PullRequests.Create(ctx, "acme", "gitops", newPR); err != nil {
		t.Errorf("reopening after the first closed: %v", err)
	}
}

func TestCommentsLabelsReactionsAndPermissions(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	n := s.OpenPullRequest("acme/shop", "octocat", "release", "main", "Release v2")
	user := s.AddComment("acme/shop", n, "octocat", "/ripcord rollback")

	if _, _, err := client.Issues.AddLabelsToIssue(ctx, "acme", "shop", n, []string{"rollback", "ripcord"}); err != nil {
		t.Fatal(err)
	}
	reply, _, err := client.Issues.CreateComment(ctx, "acme", "shop", n, &github.IssueComment{Body: github.String("Rolling back.")})
	if err != nil {
		t.Fatal(err)
	}
	if reply.GetUser().GetLogin() != BotLogin {
		t.Errorf("reply by %q, want %q", reply.GetUser().GetLogin(), BotLogin)
	}
	_, first, err := client.Reactions.CreateIssueCommentReaction(ctx, "acme", "shop", user.ID, "eyes")
	if err != nil {
		t.Fatal(err)
	}
	_, again, err := client.Reactions.CreateIssueCommentReaction(ctx, "acme", "shop", user.ID, "eyes")
	if err != nil {
		t.Fatal(err)
	}
	if first.StatusCode != http.StatusCreated || again.StatusCode != http.StatusOK {
		t.Errorf("reaction statuses %d then %d, want 201 then 200", first.StatusCode, again.StatusCode)
	}
	if rx := s.Reactions("acme/shop", user.ID); len(rx) != 1 || rx[0].Content != "eyes" {
		t.Errorf("reactions %+v", rx)
	}
	issues := s.Issues("acme/shop")
	if len(issues) != 1 || strings.Join(issues[0].Labels, ",") != "rollback,ripcord" || !issues[0].PullRequest {
		t.Errorf("issues %+v", issues)
	}
	if got := s.Comments("acme/shop"); len(got) != 2 || got[1].Body != "Rolling back." {
		t.Errorf("comments %+v", got)
	}

	s.SetPermission("acme/shop", "octocat", "maintain")
	cases := []struct{ user, permission, role string }{
		{"octocat", "write", "maintain"},
		{"stranger", "read", "read"},
	}
	for _, c := range cases {
		level, _, err := client.Repositories.GetPermissionLevel(ctx, "acme", "shop", c.user)
		if err != nil {
			t.Fatal(err)
		}
		if level.GetPermission() != c.permission || level.GetRoleName() != c.role {
			t.Errorf("%s: permission %q role %q, want %q %q", c.user, level.GetPermission(), level.GetRoleName(), c.permission, c.role)
		}
	}
}

func TestIssuesCreateListAndClose(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	issue, _, err := client.Issues.Create(ctx, "acme", "shop", &github.IssueRequest{
		Title: github.String("ripcord: manual intervention required"), Labels: &[]string{"ripcord"},
	})
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := client.Issues.ListByRepo(ctx, "acme", "shop", &github.IssueListByRepoOptions{Labels: []string{"ripcord"}})
	if err != nil || len(list) != 1 || list[0].GetNumber() != issue.GetNumber() {
		t.Errorf("listed %d issues (%v)", len(list), err)
	}
	if _, _, err := client.Issues.Edit(ctx, "acme", "shop", issue.GetNumber(), &github.IssueRequest{State: github.String("closed")}); err != nil {
		t.Fatal(err)
	}
	open, _, _ := client.Issues.ListByRepo(ctx, "acme", "shop", nil)
	if len(open) != 0 {
		t.Errorf("%d open issues after closing the only one", len(open))
	}
}
