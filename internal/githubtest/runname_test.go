package githubtest

import (
	"context"
	"testing"

	"github.com/google/go-github/v66/github"
)

func TestRunNameBecomesTheDisplayTitle(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	s.SetRunName("acme/shop", "deploy.yml", "${{ inputs.batch }} ${{inputs.release_id}}")
	for _, wf := range []string{"deploy.yml", "other.yml"} {
		_, err := client.Actions.CreateWorkflowDispatchEventByFileName(ctx, "acme", "shop", wf, github.CreateWorkflowDispatchEventRequest{
			Ref: "main", Inputs: map[string]interface{}{"batch": "deploy@canary#0", "release_id": "r1"},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for wf, want := range map[string]string{"deploy.yml": "deploy@canary#0 r1", "other.yml": "other"} {
		runs, _, err := client.Actions.ListWorkflowRunsByFileName(ctx, "acme", "shop", wf, &github.ListWorkflowRunsOptions{Event: "workflow_dispatch"})
		if err != nil || len(runs.WorkflowRuns) != 1 || runs.WorkflowRuns[0].GetDisplayTitle() != want {
			t.Errorf("%s: runs %+v (%v), want one titled %q", wf, runs, err, want)
		}
	}
}
