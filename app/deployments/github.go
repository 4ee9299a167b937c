package deployments

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"
)

// deploymentsAPI is the part of GitHub's API this room uses;
// *github.RepositoriesService has it.
type deploymentsAPI interface {
	CreateDeployment(ctx context.Context, owner, repo string, req *github.DeploymentRequest) (*github.Deployment, *github.Response, error)
	ListDeployments(ctx context.Context, owner, repo string, opts *github.DeploymentsListOptions) ([]*github.Deployment, *github.Response, error)
	CreateDeploymentStatus(ctx context.Context, owner, repo string, id int64, req *github.DeploymentStatusRequest) (*github.DeploymentStatus, *github.Response, error)
	ListDeploymentStatuses(ctx context.Context, owner, repo string, id int64, opts *github.ListOptions) ([]*github.DeploymentStatus, *github.Response, error)
}

// repoRef is a repository as owner and name.
type repoRef struct{ owner, name string }

func splitRepo(full string) repoRef {
	o, n, _ := strings.Cut(full, "/")
	return repoRef{o, n}
}

// createDeployment asks GitHub for the deployment. auto_merge is off and no
// status contexts are required: the release already happened, ripcord only
// reports it, so GitHub must neither merge the default branch into the ref
// nor refuse because a check is red.
func createDeployment(ctx context.Context, api deploymentsAPI, repo repoRef, q Request) (int64, error) {
	d, _, err := api.CreateDeployment(ctx, repo.owner, repo.name, &github.DeploymentRequest{
		Ref: &q.Ref, Task: github.String("deploy"), AutoMerge: github.Bool(false), RequiredContexts: &[]string{},
		Payload: q.Payload, Environment: &q.Environment, Description: &q.Description,
		TransientEnvironment: &q.Transient, ProductionEnvironment: &q.Production,
	})
	if err != nil {
		return 0, fmt.Errorf("create deployment of %s in %s/%s: %w", q.Payload.ReleaseID, repo.owner, repo.name, err)
	}
	return d.GetID(), nil
}

// findDeployment looks for a deployment an earlier attempt created, by the
// release id in its payload, among those of the same ref and environment.
func findDeployment(ctx context.Context, api deploymentsAPI, repo repoRef, q Request) (int64, error) {
	opts := &github.DeploymentsListOptions{Ref: q.Ref, Environment: q.Environment, ListOptions: github.ListOptions{PerPage: 100}}
	for {
		list, resp, err := api.ListDeployments(ctx, repo.owner, repo.name, opts)
		if err != nil {
			return 0, fmt.Errorf("look for the deployment of %s in %s/%s: %w", q.Payload.ReleaseID, repo.owner, repo.name, err)
		}
		for _, d := range list {
			if payloadRelease(d.Payload) == q.Payload.ReleaseID {
				return d.GetID(), nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return 0, nil
		}
		opts.Page = resp.NextPage
	}
}

func payloadRelease(raw json.RawMessage) string {
	var p Payload
	if json.Unmarshal(raw, &p) != nil {
		return ""
	}
	return p.ReleaseID
}

// statusWrite is one deployment status to write.
type statusWrite struct {
	State       Status
	Description string
	URL         string // log_url and environment_url: the release's page
	Environment string
}

// writeStatus posts one status. auto_inactive is off: ripcord marks a
// release inactive itself when its record is closed, and GitHub's own
// sweep would wrongly inactivate the release of another cluster of the
// same environment.
func writeStatus(ctx context.Context, api deploymentsAPI, repo repoRef, id int64, w statusWrite) error {
	_, _, err := api.CreateDeploymentStatus(ctx, repo.owner, repo.name, id, &github.DeploymentStatusRequest{
		State: github.String(string(w.State)), Description: &w.Description, LogURL: &w.URL, EnvironmentURL: &w.URL,
		Environment: &w.Environment, AutoInactive: github.Bool(false),
	})
	if err != nil {
		return fmt.Errorf("write %s status of deployment %d in %s/%s: %w", w.State, id, repo.owner, repo.name, err)
	}
	return nil
}

// latestStatus is the newest status of a deployment ("" when it has none):
// GitHub lists them newest first.
func latestStatus(ctx context.Context, api deploymentsAPI, repo repoRef, id int64) (Status, error) {
	list, _, err := api.ListDeploymentStatuses(ctx, repo.owner, repo.name, id, &github.ListOptions{PerPage: 1})
	if err != nil {
		return "", fmt.Errorf("read the statuses of deployment %d in %s/%s: %w", id, repo.owner, repo.name, err)
	}
	if len(list) == 0 {
		return "", nil
	}
	return Status(list[0].GetState()), nil
}
