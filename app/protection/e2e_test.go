package protection_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

const repo = "acme/shop"

func config(freezeStart, freezeEnd time.Time, gates bool) string {
	g := "false"
	if gates {
		g = "true"
	}
	return `version: 1
apps:
  shop:
    environments:
      production:
        cluster: prod-eu
        targets:
          - {host: eu1-01, labels: {region: eu-1}}
        protection_rule: {enabled: true, gates: ` + g + `}
        freezes:
          - {start: "` + freezeStart.Format(time.RFC3339) + `", end: "` + freezeEnd.Format(time.RFC3339) + `", regions: [eu-1], reason: year-end freeze}
`
}

// A plain `environment: production` job asks ripcord through GitHub's
// deployment protection rule; the real server answers through GitHub's
// review endpoint, every request valid for GitHub's description.
func TestProtectionRuleAnswersByFreezeAndGates(t *testing.T) {
	now := time.Now().UTC()
	tests := []struct {
		name        string
		frozen      bool
		gates       bool
		gateResult  string // conclusion of ripcord/provenance on the commit; "" for none
		gateApp     string // the App that made it, when not ripcord (a workflow's token can)
		wantState   string
		wantComment string
	}{
		{"inside a freeze window", true, false, "", "", "rejected", "year-end freeze"},
		{"outside any freeze, gates not required", false, false, "", "", "approved", "no freeze window is active"},
		{"gates required and passed", false, true, "success", "", "approved", "ripcord/provenance"},
		{"gates required and failed", false, true, "failure", "", "rejected", "gates failed: ripcord/provenance"},
		{"gates required but none ran", false, true, "", "", "rejected", "no gate verdict"},
		{"a passing gate made by another App is no verdict", false, true, "success", "github-actions", "rejected", "no gate verdict"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e2etest.Start(t, testdb.URL(t, "sqlite"), app.Options{})
			t.Cleanup(func() {
				if bad := e.Invalid(); len(bad) > 0 {
					t.Errorf("requests GitHub would reject:\n%s", strings.Join(bad, "\n"))
				}
			})
			start, end := now.Add(-time.Hour), now.Add(time.Hour)
			if !tt.frozen {
				start, end = now.Add(24*time.Hour), now.Add(48*time.Hour)
			}
			e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config(start, end, tt.gates))
			sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
			if tt.gateResult != "" {
				e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: tt.gateResult,
					AppSlug: tt.gateApp, ExternalID: gateExternalID(sha, "shop", "production", "pull_request opened")})
			}
			e.Install(repo)
			runID := int64(100 + i)
			e.Deliver("deployment_protection_rule", githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
				Repo: repo, Environment: "production", RunID: runID, APIURL: e.GitHub.URL(), SHA: sha,
				InstallationID: githubtest.InstallationID}))
			e.WaitFor("the review", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
			e.Settle()
			reviews := e.GitHub.GateReviews(repo)
			if len(reviews) != 1 {
				t.Fatalf("%d reviews, want exactly one: %+v", len(reviews), reviews)
			}
			r := reviews[0]
			if r.RunID != runID || r.Environment != "production" || r.State != tt.wantState || !strings.Contains(r.Comment, tt.wantComment) {
				t.Errorf("review = %+v, want run %d production %s with %q", r, runID, tt.wantState, tt.wantComment)
			}
		})
	}
}

// A re-run of the waiting job (GitHub keeps the run id, and ripcord itself
// re-runs failed deploy jobs) makes a new deployment and asks again: it
// must get its own answer, or the job waits until GitHub times it out. A
// redelivery of the same request is still answered once.
func TestProtectionRuleAnswersARerunOfTheSameRun(t *testing.T) {
	e := e2etest.Start(t, testdb.URL(t, "sqlite"), app.Options{})
	now := time.Now().UTC()
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config(now.Add(24*time.Hour), now.Add(48*time.Hour), false))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	e.Install(repo)
	request := func(deploymentID int64) []byte {
		body := githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
			Repo: repo, Environment: "production", RunID: 300, APIURL: e.GitHub.URL(), SHA: sha,
			InstallationID: githubtest.InstallationID})
		var payload map[string]any
		if err := json.Unmarshal(body, &payload); err != nil {
			t.Fatal(err)
		}
		payload["deployment"].(map[string]any)["id"] = deploymentID
		body, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	first := e.Deliver("deployment_protection_rule", request(9001))
	e.WaitFor("the first review", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) == 1 })
	e.Settle()
	e.Redeliver("deployment_protection_rule", first, request(9001))
	e.Deliver("deployment_protection_rule", request(9001)) // GitHub sent the same request twice
	e.Settle()
	if n := len(e.GitHub.GateReviews(repo)); n != 1 {
		t.Fatalf("%d reviews after repeats of one request, want 1", n)
	}
	e.Deliver("deployment_protection_rule", request(9002)) // the job was re-run
	e.WaitFor("the re-run's review", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) == 2 })
	e.Settle()
	if r := e.GitHub.GateReviews(repo)[1]; r.RunID != 300 || r.State != "approved" {
		t.Errorf("re-run's review = %+v, want run 300 approved", r)
	}
}

// Gate check runs are named ripcord/<gate> for every app and environment,
// so one commit released to staging and production carries two
// evaluations of each gate (and a re-run more). The review of a production
// deployment reads production's own evaluation, whichever is newer and on
// whatever page GitHub lists it, and never staging's verdict.
func TestProtectionRuleReadsItsOwnEnvironmentsGateVerdict(t *testing.T) {
	const cfg = `version: 1
apps:
  shop:
    environments:
      staging:
        cluster: stage-eu
        protection_rule: {enabled: true, gates: true}
      production:
        cluster: prod-eu
        protection_rule: {enabled: true, gates: true}
`
	type run struct{ env, trigger, conclusion string }
	tests := []struct {
		name        string
		runs        []run // oldest first
		wantState   string
		wantComment string
	}{
		{"production passed, staging failed after it", []run{
			{"production", "pull_request opened", "success"},
			{"staging", "pull_request opened", "failure"},
		}, "approved", "gates passed: ripcord/provenance"},
		{"production failed, staging passed after it", []run{
			{"production", "pull_request opened", "failure"},
			{"staging", "pull_request opened", "success"},
		}, "rejected", "gates failed: ripcord/provenance (failure)"},
		{"only staging was evaluated", []run{
			{"staging", "pull_request opened", "success"},
		}, "rejected", "no gate verdict"},
		{"production's re-run passed, then staging failed", []run{
			{"production", "pull_request opened", "failure"},
			{"production", "check_run rerequested d1", "success"},
			{"staging", "pull_request opened", "failure"},
		}, "approved", "gates passed"},
	}
	// Production's verdict behind more than a page of staging's re-runs.
	many := []run{{"production", "pull_request opened", "success"}}
	for i := range 120 {
		many = append(many, run{"staging", fmt.Sprintf("check_run rerequested s%d", i), "failure"})
	}
	tests = append(tests, struct {
		name        string
		runs        []run
		wantState   string
		wantComment string
	}{"production's verdict past the first page", many, "approved", "gates passed"})

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e2etest.Start(t, testdb.URL(t, "sqlite"), app.Options{})
			t.Cleanup(func() {
				if bad := e.Invalid(); len(bad) > 0 {
					t.Errorf("requests GitHub would reject:\n%s", strings.Join(bad, "\n"))
				}
			})
			e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", cfg)
			sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
			for _, r := range tt.runs {
				e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: r.conclusion,
					ExternalID: gateExternalID(sha, "shop", r.env, r.trigger)})
			}
			e.Install(repo)
			runID := int64(500 + i)
			e.Deliver("deployment_protection_rule", githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
				Repo: repo, Environment: "production", RunID: runID, APIURL: e.GitHub.URL(), SHA: sha,
				InstallationID: githubtest.InstallationID}))
			e.WaitFor("the review", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
			e.Settle()
			reviews := e.GitHub.GateReviews(repo)
			if len(reviews) != 1 {
				t.Fatalf("%d reviews, want exactly one: %+v", len(reviews), reviews)
			}
			if r := reviews[0]; r.RunID != runID || r.State != tt.wantState || !strings.Contains(r.Comment, tt.wantComment) {
				t.Errorf("review = %+v, want run %d %s with %q", r, runID, tt.wantState, tt.wantComment)
			}
		})
	}
}

// gateExternalID is the external id gatesflow gives the runs of one
// evaluation of an app's environment on pull request #7.
func gateExternalID(sha, app, env, trigger string) string {
	return fmt.Sprintf("%s#7@%s %s/%s %s", repo, sha, app, env, trigger)
}
