package githubtest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

func TestRerunFailedJobsMakesANewAttempt(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	s.AddWorkflowRun("acme/shop", WorkflowRun{ID: 30433642, Conclusion: "failure", Jobs: []Job{
		{Name: "build", Conclusion: "success"}, {Name: "deploy", Conclusion: "failure"},
	}})

	if _, err := client.Actions.RerunFailedJobsByID(ctx, "acme", "shop", 30433642); err != nil {
		t.Fatal(err)
	}
	run, _, err := client.Actions.GetWorkflowRunByID(ctx, "acme", "shop", 30433642)
	if err != nil {
		t.Fatal(err)
	}
	if run.GetRunAttempt() != 2 || run.GetStatus() != "queued" || run.Conclusion != nil {
		t.Errorf("after the re-run: attempt %d status %q conclusion %v", run.GetRunAttempt(), run.GetStatus(), run.Conclusion)
	}
	jobs, _, err := client.Actions.ListWorkflowJobs(ctx, "acme", "shop", 30433642, nil)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, j := range jobs.Jobs {
		states[j.GetName()] = j.GetStatus() + "/" + j.GetConclusion()
	}
	if states["build"] != "completed/success" || states["deploy"] != "queued/" {
		t.Errorf("jobs of attempt 2: %v; want build kept and deploy queued again", states)
	}

	_, err = client.Actions.RerunFailedJobsByID(ctx, "acme", "shop", 30433642)
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusForbidden {
		t.Errorf("re-running a queued run: %v, want 403", err)
	}
	s.CompleteRun("acme/shop", 30433642, "success")
	first, _, err := client.Actions.GetWorkflowRunAttempt(ctx, "acme", "shop", 30433642, 1, nil)
	if err != nil || first.GetConclusion() != "failure" || first.GetRunAttempt() != 1 {
		t.Errorf("attempt 1 reads %q/%d (%v), want the failure", first.GetConclusion(), first.GetRunAttempt(), err)
	}
	all, _, _ := client.Actions.ListWorkflowJobs(ctx, "acme", "shop", 30433642, &github.ListWorkflowJobsOptions{Filter: "all"})
	if all.GetTotalCount() != 3 {
		t.Errorf("%d jobs over both attempts, want 3 (the kept build job is the same job)", all.GetTotalCount())
	}
	if n := s.Count("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"); n != 2 {
		t.Errorf("Count = %d, want both re-run requests", n)
	}
}

func TestRerunLimits(t *testing.T) {
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		age      time.Duration
		attempts int
		want     string
	}{
		{"a fresh failed run", time.Hour, 1, ""},
		{"a run older than 30 days", 31 * 24 * time.Hour, 1, "over a month ago"},
		{"a run at its 50th attempt", time.Hour, 50, "maximum of 50 attempts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewServer(t)
			s.SetClock(func() time.Time { return now })
			s.AddWorkflowRun("acme/shop", WorkflowRun{ID: 5, CreatedAt: now.Add(-c.age)})
			for i := 1; i < c.attempts; i++ {
				s.mu.Lock()
				rs := s.repoLocked("acme/shop").runs[5]
				rs.attempts = append(rs.attempts, rs.attempts[0])
				s.mu.Unlock()
			}
			_, err := newClient(t, s).Actions.RerunWorkflowByID(context.Background(), "acme", "shop", 5)
			if c.want == "" && err != nil {
				t.Errorf("re-run refused: %v", err)
			}
			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestWorkflowDispatch(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	s.PutFile("acme/shop", "main", ".github/workflows/deploy.yml", "on: workflow_dispatch\n")

	resp, err := client.Actions.CreateWorkflowDispatchEventByFileName(ctx, "acme", "shop", "deploy.yml", github.CreateWorkflowDispatchEventRequest{
		Ref: "main", Inputs: map[string]interface{}{"version": "v1.2.3"},
	})
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("dispatch: %v %v, want 204", resp, err)
	}
	// go-github v66 has no return_run_details; GitHub's description has it.
	req, err := client.NewRequest("POST", "repos/acme/shop/actions/workflows/deploy.yml/dispatches", map[string]any{
		"ref": "main", "inputs": map[string]any{"stage": "eu"}, "return_run_details": true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var details struct {
		WorkflowRunID int64  `json:"workflow_run_id"`
		RunURL        string `json:"run_url"`
	}
	if resp, err = client.Do(ctx, req, &details); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("dispatch with run details: %v %v", resp, err)
	}
	dispatches := s.Dispatches("acme/shop")
	if len(dispatches) != 2 || dispatches[1].RunID != details.WorkflowRunID || dispatches[0].Inputs["version"] != "v1.2.3" {
		t.Fatalf("dispatches %+v, details %+v", dispatches, details)
	}
	run, _, err := client.Actions.GetWorkflowRunByID(ctx, "acme", "shop", details.WorkflowRunID)
	if err != nil || run.GetEvent() != "workflow_dispatch" || run.GetStatus() != "queued" || run.GetHeadSHA() == "" {
		t.Errorf("dispatched run %+v (%v)", run, err)
	}
	runs, _, err := client.Actions.ListWorkflowRunsByFileName(ctx, "acme", "shop", "deploy.yml", &github.ListWorkflowRunsOptions{Event: "workflow_dispatch"})
	if err != nil || runs.GetTotalCount() != 2 {
		t.Errorf("%d runs of deploy.yml (%v), want 2", runs.GetTotalCount(), err)
	}
}

func TestGateReviewIsRecorded(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	body := BuildDeploymentProtectionRule(t, ProtectionRule{Repo: "acme/shop", RunID: 77, APIURL: s.URL(), Environment: "prod"})
	event, err := github.ParseWebHook("deployment_protection_rule", body)
	if err != nil {
		t.Fatal(err)
	}
	callback := event.(*github.DeploymentProtectionRuleEvent).GetDeploymentCallbackURL()
	req, err := client.NewRequest("POST", callback, map[string]string{"environment_name": "prod", "state": "rejected", "comment": "freeze"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Do(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	reviews := s.GateReviews("acme/shop")
	if len(reviews) != 1 || reviews[0] != (GateReview{RunID: 77, Environment: "prod", State: "rejected", Comment: "freeze"}) {
		t.Errorf("reviews %+v", reviews)
	}
}
