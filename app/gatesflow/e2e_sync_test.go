package gatesflow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A push that brings a pull request back to a head it had before (a force
// push) is evaluated again: the process gates read the pull request as it
// is now, and what changed while the head was elsewhere (here the label qa
// asks for, taken away) must reach the head's verdict. The push's
// evaluation was keyed by the head and "synchronize" alone, the same as the
// first push of that head, so it was dropped as a duplicate, and the
// deployment protection rule approved the head on its stale qa verdict.
func TestAPushBackToAnEarlierHeadIsEvaluatedAgain(t *testing.T) {
	t.Parallel()
	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", `version: 1
apps:
  checkout:
    gates:
      process:
        qa: {labels: [qa-approved]}
    environments:
      prod:
        cluster: prod-eu
        protection_rule: {enabled: true, gates: true}
        rollback:
          mode: pull-request
          file: deploy/prod.yaml
          fields: {image: image.repository, digest: image.digest}
`)
	base, first, number := openBump(e, repo)
	e.Install(repo)
	gh, err := github.NewClient(nil).WithEnterpriseURLs(e.GitHub.URL(), e.GitHub.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	push := func(head string) string {
		return e.Deliver("pull_request", e2etest.Edit(t, pullRequest(t, number, head, base, "bump-checkout"), func(m map[string]any) {
			m["action"] = "synchronize"
		}))
	}
	qa := func(head string) githubtest.CheckRun {
		var out githubtest.CheckRun
		for _, cr := range e.GitHub.CheckRuns(repo) {
			if cr.HeadSHA == head && cr.Name == "ripcord/qa" && cr.ID > out.ID {
				out = cr
			}
		}
		return out
	}

	// The first head, approved by QA.
	if _, _, err := gh.Issues.AddLabelsToIssue(ctx, "acme", "checkout", number, []string{"qa-approved"}); err != nil {
		t.Fatal(err)
	}
	push(first)
	e.Settle()
	if cr := qa(first); cr.Conclusion != "success" {
		t.Fatalf("ripcord/qa on the first head with the label: %+v, want success", cr)
	}

	// A second head; then the label is taken away.
	second := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 4))
	push(second)
	e.Settle()
	if _, err := gh.Issues.RemoveLabelForIssue(ctx, "acme", "checkout", number, "qa-approved"); err != nil {
		t.Fatal(err)
	}
	e.Deliver("pull_request", e2etest.Edit(t, pullRequest(t, number, second, base, "bump-checkout"), func(m map[string]any) {
		m["action"] = "unlabeled"
		m["label"] = map[string]any{"id": 1, "node_id": "L_1", "url": e.GitHub.URL() + "repos/" + repo + "/labels/qa-approved",
			"name": "qa-approved", "color": "ededed", "default": false, "description": nil}
	}))
	e.Settle()
	if cr := qa(second); cr.Conclusion != "failure" {
		t.Fatalf("ripcord/qa on the second head without the label: %+v, want failure", cr)
	}

	// Force-pushed back to the first head.
	if _, _, err := gh.Git.UpdateRef(ctx, "acme", "checkout", &github.Reference{Ref: github.String("refs/heads/bump-checkout"),
		Object: &github.GitObject{SHA: github.String(first)}}, true); err != nil {
		t.Fatal(err)
	}
	id := push(first)
	e.Settle()
	if cr := qa(first); cr.Conclusion != "failure" {
		t.Errorf("ripcord/qa on the first head pushed again without the label: %s %q, want failure", cr.Conclusion, cr.Title)
	}

	// A redelivery of that push is still one evaluation.
	runs := len(e.GitHub.CheckRuns(repo))
	e.Redeliver("pull_request", id, e2etest.Edit(t, pullRequest(t, number, first, base, "bump-checkout"), func(m map[string]any) {
		m["action"] = "synchronize"
	}))
	e.Settle()
	if n := len(e.GitHub.CheckRuns(repo)); n != runs {
		t.Errorf("a redelivery of the push made %d more check runs", n-runs)
	}

	// The deployment protection rule judges the head as it is now.
	e.Deliver("deployment_protection_rule", githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
		Repo: repo, Environment: "prod", RunID: 78, APIURL: e.GitHub.URL(), SHA: first,
		InstallationID: githubtest.InstallationID}))
	e.WaitFor("the review", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
	if reviews := e.GitHub.GateReviews(repo); len(reviews) != 1 || reviews[0].State != "rejected" ||
		!strings.Contains(reviews[0].Comment, "ripcord/qa") {
		t.Errorf("review %+v, want rejected for ripcord/qa", reviews)
	}
}
