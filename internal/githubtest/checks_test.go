package githubtest

import (
	"context"
	"testing"

	"github.com/google/go-github/v66/github"
)

func TestCheckRunsKeepTheirLatestState(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	head := s.PutFile("acme/gitops", "release", "a", "1")

	cr, _, err := client.Checks.CreateCheckRun(ctx, "acme", "gitops", github.CreateCheckRunOptions{
		Name: "ripcord/provenance", HeadSHA: head,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CheckRuns("acme/gitops"); len(got) != 1 || got[0].Status != "queued" {
		t.Fatalf("after create: %+v", got)
	}
	_, _, err = client.Checks.UpdateCheckRun(ctx, "acme", "gitops", cr.GetID(), github.UpdateCheckRunOptions{
		Name: "ripcord/provenance", Conclusion: github.String("failure"),
		Output:  &github.CheckRunOutput{Title: github.String("unsigned"), Summary: github.String("no signature for sha256:abc")},
		Actions: []*github.CheckRunAction{{Label: "Roll back", Description: "Roll back to v1", Identifier: "rollback"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := s.CheckRuns("acme/gitops")[0]
	if got.Status != "completed" || got.Conclusion != "failure" || got.Title != "unsigned" || got.Updates != 1 ||
		len(got.Actions) != 1 || got.Actions[0].Identifier != "rollback" {
		t.Errorf("after update: %+v", got)
	}

	if _, _, err := client.Checks.CreateCheckRun(ctx, "acme", "gitops", github.CreateCheckRunOptions{
		Name: "ripcord/provenance", HeadSHA: head, Status: github.String("completed"), Conclusion: github.String("success"),
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts *github.ListCheckRunsOptions
		want int
	}{
		{"latest of each name by default", nil, 1},
		{"all of them", &github.ListCheckRunsOptions{Filter: github.String("all")}, 2},
		{"by another name", &github.ListCheckRunsOptions{CheckName: github.String("ripcord/values")}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			list, _, err := client.Checks.ListCheckRunsForRef(ctx, "acme", "gitops", "release", c.opts)
			if err != nil || list.GetTotal() != c.want {
				t.Errorf("%d check runs (%v), want %d", list.GetTotal(), err, c.want)
			}
		})
	}
}

func TestDeploymentsAndStatuses(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	head := s.PutFile("acme/shop", "main", "a", "1")
	d, _, err := client.Repositories.CreateDeployment(ctx, "acme", "shop", &github.DeploymentRequest{
		Ref: github.String("main"), Environment: github.String("prod"), RequiredContexts: &[]string{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.GetSHA() != head {
		t.Errorf("deployment sha %s, want main's %s", d.GetSHA(), head)
	}
	if _, _, err := client.Repositories.CreateDeploymentStatus(ctx, "acme", "shop", d.GetID(), &github.DeploymentStatusRequest{
		State: github.String("failure"), Description: github.String("health check failed"),
	}); err != nil {
		t.Fatal(err)
	}
	got := s.Deployments("acme/shop")
	if len(got) != 1 || len(got[0].Statuses) != 1 || got[0].Statuses[0].State != "failure" || got[0].Statuses[0].Environment != "prod" {
		t.Errorf("deployments %+v", got)
	}
	list, _, err := client.Repositories.ListDeployments(ctx, "acme", "shop", &github.DeploymentsListOptions{Environment: "staging"})
	if err != nil || len(list) != 0 {
		t.Errorf("%d staging deployments (%v), want 0", len(list), err)
	}
	if _, _, err := client.Repositories.CreateDeployment(ctx, "acme", "shop", &github.DeploymentRequest{Ref: github.String("no-such-branch")}); err == nil {
		t.Errorf("a deployment of a ref that does not exist was created")
	}
}
