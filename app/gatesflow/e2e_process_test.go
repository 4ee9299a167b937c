package gatesflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The process gates read the pull request, not its commit: qa its labels,
// itsm its body. When a reviewer adds the label qa asks for, or writes the
// change reference into the body, the gate's check run must follow; a
// label no gate reads evaluates nothing.
func TestProcessGatesFollowTheLabelsAndTheBody(t *testing.T) {
	t.Parallel()
	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig(`process:
  qa: {labels: [qa-approved]}
  itsm: {body_field: 'CHG[0-9]{7}'}`, "prod"))
	base, head, number := openBump(e, repo)
	e.Install(repo)
	gh, err := github.NewClient(nil).WithEnterpriseURLs(e.GitHub.URL(), e.GitHub.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	newest := func(name string) githubtest.CheckRun {
		var out githubtest.CheckRun
		for _, cr := range e.GitHub.CheckRuns(repo) {
			if cr.HeadSHA == head && cr.Name == name && cr.ID > out.ID {
				out = cr
			}
		}
		return out
	}
	event := func(action string, edit func(m map[string]any)) []byte {
		return e2etest.Edit(t, pullRequest(t, number, head, base, "bump-checkout"), func(m map[string]any) {
			m["action"] = action
			edit(m)
		})
	}
	label := func(action, name string) {
		e.Deliver("pull_request", event(action, func(m map[string]any) {
			m["label"] = map[string]any{"id": 1, "node_id": "L_1", "url": e.GitHub.URL() + "repos/" + repo + "/labels/" + name,
				"name": name, "color": "ededed", "default": false, "description": nil}
		}))
		e.Settle()
	}

	e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
	e.WaitFor("the first evaluation", 20*time.Second, func() bool { return len(completedRuns(e, head)) == 2 })
	e.Settle()
	if qa, itsm := newest("ripcord/qa"), newest("ripcord/itsm"); qa.Conclusion != "failure" || itsm.Conclusion != "failure" {
		t.Fatalf("before: qa %s, itsm %s, want both failure", qa.Conclusion, itsm.Conclusion)
	}

	// A label no gate reads: nothing is evaluated again.
	if _, _, err := gh.Issues.AddLabelsToIssue(ctx, "acme", "checkout", number, []string{"size/S"}); err != nil {
		t.Fatal(err)
	}
	runs := len(e.GitHub.CheckRuns(repo))
	label("labeled", "size/S")
	if n := len(e.GitHub.CheckRuns(repo)); n != runs {
		t.Errorf("a label no gate reads made %d more check runs", n-runs)
	}

	// The label qa asks for.
	if _, _, err := gh.Issues.AddLabelsToIssue(ctx, "acme", "checkout", number, []string{"qa-approved"}); err != nil {
		t.Fatal(err)
	}
	label("labeled", "qa-approved")
	if qa := newest("ripcord/qa"); qa.Conclusion != "success" {
		t.Errorf("after the qa-approved label: ripcord/qa %s %q, want success", qa.Conclusion, qa.Title)
	}

	// The change reference written into the body.
	if _, _, err := gh.PullRequests.Edit(ctx, "acme", "checkout", number, &github.PullRequest{Body: github.String("Change CHG0012345")}); err != nil {
		t.Fatal(err)
	}
	e.Deliver("pull_request", event("edited", func(m map[string]any) {
		m["changes"] = map[string]any{"body": map[string]any{"from": ""}}
		m["pull_request"].(map[string]any)["body"] = "Change CHG0012345"
	}))
	e.Settle()
	if itsm, qa := newest("ripcord/itsm"), newest("ripcord/qa"); itsm.Conclusion != "success" || qa.Conclusion != "success" {
		t.Errorf("after the body names a change: itsm %s %q, qa %s, want both success", itsm.Conclusion, itsm.Title, qa.Conclusion)
	}

	// The label taken away again.
	if _, err := gh.Issues.RemoveLabelForIssue(ctx, "acme", "checkout", number, "qa-approved"); err != nil {
		t.Fatal(err)
	}
	label("unlabeled", "qa-approved")
	if qa := newest("ripcord/qa"); qa.Conclusion != "failure" {
		t.Errorf("after the qa-approved label is removed: ripcord/qa %s, want failure", qa.Conclusion)
	}
}
