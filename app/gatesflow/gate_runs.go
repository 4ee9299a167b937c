package gatesflow

import (
	"context"
	"fmt"

	"github.com/google/go-github/v66/github"
)

// gateRuns lists the gate runs this App (appID) made on head in
// repository, every one of them: filter=all, as GitHub's default (latest)
// keeps only the newest run of each name. app_id leaves out the runs a
// workflow's token or another App made with a gate's name.
func gateRuns(ctx context.Context, gh *github.Client, appID int64, repository, head string) ([]*github.CheckRun, error) {
	owner, repo := splitRepo(repository)
	opts := &github.ListCheckRunsOptions{AppID: &appID, Filter: github.String("all"), ListOptions: github.ListOptions{PerPage: 100}}
	var out []*github.CheckRun
	for {
		list, resp, err := gh.Checks.ListCheckRunsForRef(ctx, owner, repo, head, opts)
		if err != nil {
			return nil, fmt.Errorf("list the gate runs of %s@%s: %w", repository, head, err)
		}
		for _, cr := range list.CheckRuns {
			if cr.GetApp().GetID() == appID && isGate(cr.GetName()) {
				out = append(out, cr)
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}
