package protection_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
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
        gates:
          provenance: {keys: [.github/cosign.pub]}
        freezes:
          - {start: "` + freezeStart.Format(time.RFC3339) + `", end: "` + freezeEnd.Format(time.RFC3339) + `", regions: [eu-1], reason: year-end freeze}
`
}

// A plain `environment: production` job asks ripcord through GitHub's
// deployment protection rule; the real server answers through GitHub's
// review endpoint, every request valid for GitHub's description.
func TestProtectionRuleAnswersByFreezeAndGates(t *testing.T) {
	t.Parallel()
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
			e.CheckRequestsAtCleanup(t)
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
			r := deploy(t, e, sha, runID)
			if r.RunID != runID || r.Environment != "production" || r.State != tt.wantState || !strings.Contains(r.Comment, tt.wantComment) {
				t.Errorf("review = %+v, want run %d production %s with %q", r, runID, tt.wantState, tt.wantComment)
			}
		})
	}
}

// requestOf is GitHub's deployment_protection_rule event for production,
// run runID at sha, waiting on deployment deploymentID (a re-run of the
// run waits on a new one).
func requestOf(t *testing.T, e *e2etest.Env, sha string, runID, deploymentID int64) []byte {
	t.Helper()
	body := githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
		Repo: repo, Environment: "production", RunID: runID, APIURL: e.GitHub.URL(), SHA: sha,
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

// A re-run of the waiting job (GitHub keeps the run id, and ripcord itself
// re-runs failed deploy jobs) makes a new deployment and asks again: it
// must get its own answer, or the job waits until GitHub times it out. A
// redelivery of the same request is still answered once.
func TestProtectionRuleAnswersARerunOfTheSameRun(t *testing.T) {
	t.Parallel()
	e := e2etest.Start(t, testdb.URL(t, "sqlite"), app.Options{})
	now := time.Now().UTC()
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config(now.Add(24*time.Hour), now.Add(48*time.Hour), false))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	e.Install(repo)
	request := func(deploymentID int64) []byte { return requestOf(t, e, sha, 300, deploymentID) }
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
	t.Parallel()
	const cfg = `version: 1
apps:
  shop:
    environments:
      staging:
        cluster: stage-eu
        protection_rule: {enabled: true, gates: true}
        gates:
          provenance: {keys: [.github/cosign.pub]}
      production:
        cluster: prod-eu
        protection_rule: {enabled: true, gates: true}
        gates:
          provenance: {keys: [.github/cosign.pub]}
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
			e.CheckRequestsAtCleanup(t)
			e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", cfg)
			sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
			for _, r := range tt.runs {
				e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: r.conclusion,
					ExternalID: gateExternalID(sha, "shop", r.env, r.trigger)})
			}
			e.Install(repo)
			runID := int64(500 + i)
			if r := deploy(t, e, sha, runID); r.RunID != runID || r.State != tt.wantState || !strings.Contains(r.Comment, tt.wantComment) {
				t.Errorf("review = %+v, want run %d %s with %q", r, runID, tt.wantState, tt.wantComment)
			}
		})
	}
}

// deploy delivers a deployment_protection_rule request for sha to
// production and returns ripcord's only review of it.
func deploy(t *testing.T, e *e2etest.Env, sha string, runID int64) githubtest.GateReview {
	t.Helper()
	e.Deliver("deployment_protection_rule", githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
		Repo: repo, Environment: "production", RunID: runID, APIURL: e.GitHub.URL(), SHA: sha,
		InstallationID: githubtest.InstallationID}))
	e.WaitFor("the review", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
	e.Settle()
	reviews := e.GitHub.GateReviews(repo)
	if len(reviews) != 1 {
		t.Fatalf("%d reviews, want exactly one: %+v", len(reviews), reviews)
	}
	return reviews[0]
}

func startShop(t *testing.T, cfg string) *e2etest.Env {
	t.Helper()
	e := e2etest.Start(t, testdb.URL(t, "sqlite"), app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", cfg)
	return e
}

// A merge commit carries no gate runs: its pull request's head does. Many
// pull requests can contain the commit (a long-lived branch merged into
// many); the one that brought it is found however far down GitHub lists
// it, not only among the first ten.
func TestProtectionRuleFindsThePullRequestPastTheFirstTen(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	e := startShop(t, config(now.Add(24*time.Hour), now.Add(48*time.Hour), true))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	head := strings.Repeat("ab", 20)
	e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: head, Conclusion: "success",
		ExternalID: gateExternalID(head, "shop", "production", "pull_request opened")})
	const total = 120 // the one with the gate runs is the last
	e.GitHub.Handle("GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		if per <= 0 || per > 100 {
			per = 30
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		page = max(page, 1)
		var list []map[string]any
		for n := (page-1)*per + 1; n <= min(page*per, total); n++ {
			h := strings.Repeat(fmt.Sprintf("%02x", n), 20)
			if n == total {
				h = head
			}
			list = append(list, map[string]any{"number": n, "state": "closed", "head": map[string]any{"sha": h, "ref": fmt.Sprint("b", n)}})
		}
		if page*per < total {
			u := *r.URL
			q := u.Query()
			q.Set("page", strconv.Itoa(page+1))
			u.RawQuery = q.Encode()
			w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, e.GitHub.URL(), strings.TrimPrefix(u.RequestURI(), "/")))
		}
		w.Header().Set("Content-Type", "application/json")
		if list == nil {
			list = []map[string]any{}
		}
		_ = json.NewEncoder(w).Encode(list)
	})
	e.Install(repo)
	if r := deploy(t, e, sha, 700); r.State != "approved" || !strings.Contains(r.Comment, "ripcord/provenance") {
		t.Errorf("review = %+v, want approved by the gates of pull request #%d", r, total)
	}
}

// A gate removed from the config is not judged any more: its old run on
// the commit (here a failed ripcord/qa) neither refuses nor approves.
func TestProtectionRuleJudgesOnlyTheGatesTheConfigRequires(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	e := startShop(t, config(now.Add(24*time.Hour), now.Add(48*time.Hour), true))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/qa", HeadSHA: sha, Conclusion: "failure",
		ExternalID: gateExternalID(sha, "shop", "production", "pull_request opened")})
	e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: "success",
		ExternalID: gateExternalID(sha, "shop", "production", "pull_request synchronize")})
	e.Install(repo)
	if r := deploy(t, e, sha, 701); r.State != "approved" || strings.Contains(r.Comment, "ripcord/qa") {
		t.Errorf("review = %+v, want approved by ripcord/provenance alone", r)
	}
}

// A newer evaluation replaces an older one whole: while it has reported
// only some of its gates, the review waits for the rest, rather than
// approving with the older evaluation's verdict of the gates not reported
// yet (here a failed commit signing fixed by the newer push, and a
// provenance that passed on the older one).
func TestProtectionRuleDoesNotMixAnOlderEvaluationIn(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	e := startShop(t, strings.Replace(config(now.Add(24*time.Hour), now.Add(48*time.Hour), true),
		"provenance: {keys: [.github/cosign.pub]}", "provenance: {keys: [.github/cosign.pub]}\n          commit_signing: true", 1))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	for _, r := range []struct{ name, conclusion, trigger string }{
		{"ripcord/commit-signing", "failure", "pull_request opened"},
		{"ripcord/provenance", "success", "pull_request opened"},
		{"ripcord/commit-signing", "success", "pull_request synchronize"}, // the newer one, still reporting
	} {
		e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: r.name, HeadSHA: sha, Conclusion: r.conclusion,
			ExternalID: gateExternalID(sha, "shop", "production", r.trigger)})
	}
	e.Install(repo)
	e.Deliver("deployment_protection_rule", githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
		Repo: repo, Environment: "production", RunID: 702, APIURL: e.GitHub.URL(), SHA: sha,
		InstallationID: githubtest.InstallationID}))
	e.WaitFor("the review to be answered or to wait", 20*time.Second, func() bool {
		return len(e.GitHub.GateReviews(repo)) > 0 ||
			e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'protection_review' AND state = 'scheduled'`) > 0
	})
	if r := e.GitHub.GateReviews(repo); len(r) > 0 {
		t.Fatalf("reviews = %+v, want none while the newest evaluation has not reported ripcord/provenance", r)
	}
}

// Evaluations of a commit can finish out of order: a re-run whose gate was
// slow writes its verdict after a later re-run wrote its own. The newest
// evaluation is the one asked for last (the seq gatesflow puts in the
// external id), not the one that wrote last: the older one's pass must not
// approve what the newer one refused.
func TestProtectionRuleJudgesTheEvaluationAskedForLast(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	e := startShop(t, config(now.Add(24*time.Hour), now.Add(48*time.Hour), true))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: "failure",
		ExternalID: gateExternalID(sha, "shop", "production", "check_run rerequested d-2 seq=12")})
	e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: "success",
		ExternalID: gateExternalID(sha, "shop", "production", "check_run rerequested d-1 seq=9")}) // written last
	e.Install(repo)
	if r := deploy(t, e, sha, 703); r.State != "rejected" || !strings.Contains(r.Comment, "ripcord/provenance (failure)") {
		t.Errorf("review = %+v, want rejected by the newest evaluation's failed ripcord/provenance", r)
	}
}

// Runs made before external ids carried a seq are older than any that
// carries one, and among themselves the newest run's evaluation counts.
func TestProtectionRuleOrdersRunsWithoutSeqBeforeThoseWithOne(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	e := startShop(t, config(now.Add(24*time.Hour), now.Add(48*time.Hour), true))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: "failure",
		ExternalID: gateExternalID(sha, "shop", "production", "pull_request opened seq=3")})
	e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: "success",
		ExternalID: gateExternalID(sha, "shop", "production", "pull_request opened")}) // an old job's, written last
	e.Install(repo)
	if r := deploy(t, e, sha, 704); r.State != "rejected" {
		t.Errorf("review = %+v, want rejected by the evaluation with a seq", r)
	}
}

// gateExternalID is the external id gatesflow gives the runs of one
// evaluation of an app's environment on pull request #7.
func gateExternalID(sha, app, env, trigger string) string {
	return fmt.Sprintf("%s#7@%s %s/%s %s", repo, sha, app, env, trigger)
}

// Each app's environment is judged by the evaluation of its own on the
// deployed commit, and, when the commit has none of its own (a merge
// commit), by the one on the heads of the pull requests that contain it.
// The merge commit carrying another app's evaluation (here cart's, of the
// same environment) must not stop the rule from looking at the pull
// request's head, where shop's evaluation (failed) lives.
func TestProtectionRuleFallsBackToThePullRequestPerApp(t *testing.T) {
	t.Parallel()
	const cfg = `version: 1
apps:
  shop:
    environments:
      production:
        cluster: prod-eu
        protection_rule: {enabled: true, gates: true}
        gates:
          provenance: {keys: [.github/cosign.pub]}
  cart:
    environments:
      production:
        cluster: prod-eu
        protection_rule: {enabled: true, gates: true}
        gates:
          provenance: {keys: [.github/cosign.pub]}
`
	tests := []struct {
		name                    string
		shopOnHead, cartOnMerge string // conclusions; "" for no evaluation
		cartOnHead              string
		wantState, wantComment  string
	}{
		{"shop failed on the head, cart passed on the merge commit", "failure", "success", "", "rejected", "gates failed: ripcord/provenance (failure)"},
		{"shop passed on the head, cart passed on the merge commit", "success", "success", "", "approved", "gates passed"},
		{"the merge commit's own evaluation of cart wins over the head's", "success", "success", "failure", "approved", "gates passed"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startShop(t, cfg)
			sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
			head := strings.Repeat("cd", 20)
			add := func(app, on, conclusion string) {
				if conclusion != "" {
					e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: on, Conclusion: conclusion,
						ExternalID: gateExternalID(on, app, "production", "pull_request opened")})
				}
			}
			add("shop", head, tt.shopOnHead)
			add("cart", head, tt.cartOnHead)
			add("cart", sha, tt.cartOnMerge)
			servePullRequestWithHead(e, head)
			e.Install(repo)
			runID := int64(800 + i)
			if r := deploy(t, e, sha, runID); r.State != tt.wantState || !strings.Contains(r.Comment, tt.wantComment) {
				t.Errorf("review = %+v, want %s with %q", r, tt.wantState, tt.wantComment)
			}
		})
	}
}

// servePullRequestWithHead answers GitHub's "pull requests with a commit"
// with one merged pull request (#7) whose head is head.
func servePullRequestWithHead(e *e2etest.Env, head string) {
	e.GitHub.Handle("GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode([]map[string]any{{"number": 7, "state": "closed", "head": map[string]any{"sha": head, "ref": "release-7"}}})
	})
}

// A rejection by a freeze says which window holds the deployment and until
// when, as README promises: a window without a reason is described by its
// times and regions, and "until" is when the environment may really go,
// also when another app's window on the same environment takes over as
// the first one ends (a re-run at the first one's end would only be
// rejected again).
func TestProtectionRuleSaysWhichFreezeAndUntilWhen(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	stamp := func(t time.Time) string { return t.Format(time.RFC3339) }
	tests := []struct {
		name, cfg   string
		wantComment string
	}{
		{"a window without a reason", `version: 1
apps:
  shop:
    environments:
      production:
        cluster: prod-eu
        protection_rule: {enabled: true}
        freezes:
          - {start: "` + stamp(now.Add(-time.Hour)) + `", end: "` + stamp(now.Add(time.Hour)) + `"}
`, "ripcord: shop production is frozen until " + stamp(now.Add(time.Hour)) + ": freeze (" +
			stamp(now.Add(-time.Hour)) + " to " + stamp(now.Add(time.Hour)) + ", all regions)"},
		{"another app's window takes over as the first ends", `version: 1
apps:
  shop:
    environments:
      production:
        cluster: prod-eu
        protection_rule: {enabled: true}
        freezes:
          - {start: "` + stamp(now.Add(-time.Hour)) + `", end: "` + stamp(now.Add(time.Hour)) + `", reason: shop migration}
  cart:
    environments:
      production:
        cluster: prod-eu
        protection_rule: {enabled: true}
        freezes:
          - {start: "` + stamp(now.Add(time.Hour)) + `", end: "` + stamp(now.Add(3*time.Hour)) + `", reason: cart migration}
`, "ripcord: shop production is frozen until " + stamp(now.Add(3*time.Hour)) + ": shop migration"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startShop(t, tt.cfg)
			sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
			e.Install(repo)
			if r := deploy(t, e, sha, int64(900+i)); r.State != "rejected" || r.Comment != tt.wantComment {
				t.Errorf("review = %+v, want rejected with %q", r, tt.wantComment)
			}
		})
	}
}

// reviewPosts are the bodies ripcord posted to the review endpoint of repo,
// whatever the fake answered.
func reviewPosts(t *testing.T, e *e2etest.Env) []githubtest.GateReview {
	t.Helper()
	var out []githubtest.GateReview
	for _, r := range e.GitHub.Requests() {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.Route, "/deployment_protection_rule") {
			continue
		}
		var body struct {
			EnvironmentName string `json:"environment_name"`
			State, Comment  string
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("review body %s: %v", r.Body, err)
		}
		runID, _ := strconv.ParseInt(r.Params["run_id"], 10, 64)
		out = append(out, githubtest.GateReview{RunID: runID, Environment: body.EnvironmentName, State: body.State, Comment: body.Comment})
	}
	return out
}

// refuseReview answers a review post as GitHub answers one it does not
// take: status, with GitHub's JSON error body saying message.
func refuseReview(w http.ResponseWriter, status int, message string) {
	body, _ := json.Marshal(map[string]string{"message": message})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// GitHub may have taken an answer it replied 5xx to (a POST is not repeated
// by the client for that reason). The job's next attempt must post that
// same answer, not decide again: a freeze that began in between would
// otherwise send "rejected" after an "approved" GitHub may have acted on.
func TestProtectionRuleRepeatsItsAnswerAfterAFailedPost(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		now := time.Now().UTC().Truncate(time.Second)
		e := e2etest.Start(t, dbURL, app.Options{RetryBase: 50 * time.Millisecond})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config(now.Add(24*time.Hour), now.Add(48*time.Hour), false))
		sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
		var mu sync.Mutex
		answer := false
		review := e.GitHub.Default("POST /repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule")
		e.GitHub.Handle("POST /repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			mu.Lock()
			ok := answer
			mu.Unlock()
			if !ok {
				refuseReview(w, http.StatusBadGateway, "Server Error")
				return
			}
			review(w, r, p)
		})
		e.Install(repo)
		e.Deliver("deployment_protection_rule", githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
			Repo: repo, Environment: "production", RunID: 950, APIURL: e.GitHub.URL(), SHA: sha,
			InstallationID: githubtest.InstallationID}))
		e.WaitFor("the first answer", 20*time.Second, func() bool { return len(reviewPosts(t, e)) > 0 })
		// A freeze begins before GitHub takes answers again.
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config(now.Add(-time.Hour), now.Add(time.Hour), false))
		mu.Lock()
		answer = true
		mu.Unlock()
		e.WaitFor("the answer GitHub takes", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
		e.Settle()
		posts := reviewPosts(t, e)
		if len(posts) < 2 {
			t.Fatalf("posts = %+v, want the failed one and the one GitHub took", posts)
		}
		for _, p := range posts {
			if p != posts[0] || p.State != "approved" {
				t.Errorf("posts = %+v, want every one the first answer (approved, before the freeze)", posts)
				break
			}
		}
	})
}

// GitHub refusing the answer (4xx: the run was cancelled, nothing waits on
// the rule any more, the App lacks the permission) will refuse it again:
// the review ends after that one answer rather than post it for every
// attempt of the job.
func TestProtectionRuleStopsWhenGitHubRefusesTheAnswer(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	e := e2etest.Start(t, testdb.URL(t, "sqlite"), app.Options{RetryBase: time.Millisecond})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config(now.Add(24*time.Hour), now.Add(48*time.Hour), false))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	e.GitHub.Handle("POST /repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		refuseReview(w, http.StatusUnprocessableEntity, "No pending custom deployment protection rule found")
	})
	e.Install(repo)
	e.Deliver("deployment_protection_rule", githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
		Repo: repo, Environment: "production", RunID: 951, APIURL: e.GitHub.URL(), SHA: sha,
		InstallationID: githubtest.InstallationID}))
	e.WaitFor("the review to end", 30*time.Second, func() bool {
		return e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'protection_review' AND state IN ('completed', 'cancelled', 'discarded')`) == 1
	})
	if n := len(reviewPosts(t, e)); n != 1 {
		t.Errorf("%d answers posted, want 1: GitHub refused it", n)
	}
	if s := e.String(`SELECT state FROM river_job WHERE kind = 'protection_review'`); s != "cancelled" {
		t.Errorf("review job %s, want cancelled", s)
	}
}

// ripcord answers through the GitHub API it is configured with, for the
// event's repository, and only reads the run id from
// deployment_callback_url: it never sends the answer where the URL points.
// A callback URL that names another repository's run, or no run, is not a
// request ripcord can answer: the run id would be another repository's,
// and answering the event's repository's run of that number could approve
// a job nobody asked about. The delivery fails, saying why.
func TestProtectionRuleAnswersOnlyTheEventsRepositorysRun(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	tests := []struct{ name, callback, wantError string }{
		{"another repository's run", "repos/acme/other/actions/runs/960/deployment_protection_rule", "names acme/other, not the event's repository acme/shop"},
		{"another host, the event's repository", "https://callback.invalid/repos/acme/shop/actions/runs/961/deployment_protection_rule", ""},
		{"no run", "repos/acme/shop/deployments/962", "names no workflow run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startShop(t, config(now.Add(24*time.Hour), now.Add(48*time.Hour), false))
			sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
			e.Install(repo)
			callback := tt.callback
			if !strings.HasPrefix(callback, "https://") {
				callback = e.GitHub.URL() + callback
			}
			body := e2etest.Edit(t, githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
				Repo: repo, Environment: "production", RunID: 1, APIURL: e.GitHub.URL(), SHA: sha,
				InstallationID: githubtest.InstallationID}), func(m map[string]any) { m["deployment_callback_url"] = callback })
			id := e.Deliver("deployment_protection_rule", body)
			if tt.wantError == "" {
				e.WaitFor("the review", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
				e.Settle()
				if r := e.GitHub.GateReviews(repo); len(r) != 1 || r[0].RunID != 961 || r[0].State != "approved" {
					t.Errorf("reviews = %+v, want run 961 of %s approved through the configured API", r, repo)
				}
				return
			}
			e.WaitFor("the delivery to end", 20*time.Second, func() bool {
				return e.String(`SELECT state FROM deliveries WHERE id = $1`, id) != "queued"
			})
			e.Settle()
			if r := reviewPosts(t, e); len(r) != 0 {
				t.Errorf("reviews = %+v, want none", r)
			}
			if s := e.String(`SELECT state FROM deliveries WHERE id = $1`, id); s != "failed" {
				t.Errorf("delivery %s, want failed", s)
			}
			if got := e.String(`SELECT last_error FROM deliveries WHERE id = $1`, id); !strings.Contains(got, tt.wantError) {
				t.Errorf("delivery error %q, want it to say %q", got, tt.wantError)
			}
		})
	}
}

// gateRunning starts a server whose production needs ripcord/provenance,
// which is running on the commit deploy/prod.yaml was last changed in: it
// returns the server, the commit and the evaluation's external id.
func gateRunning(t *testing.T, dbURL string) (*e2etest.Env, string, string) {
	t.Helper()
	now := time.Now().UTC()
	e := e2etest.Start(t, dbURL, app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config(now.Add(24*time.Hour), now.Add(48*time.Hour), true))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	evaluation := gateExternalID(sha, "shop", "production", "pull_request opened")
	e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Status: "in_progress", ExternalID: evaluation})
	e.Install(repo)
	return e, sha, evaluation
}

// A gate still running makes the review wait, not answer: ripcord looks
// again (every minute; here the test moves the job's time up rather than
// wait) and answers once the gate has finished, once, however often GitHub
// sends the request meanwhile and after.
func TestProtectionRuleAnswersOnceWhenTheGatesFinish(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e, sha, evaluation := gateRunning(t, dbURL)
		request := githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
			Repo: repo, Environment: "production", RunID: 970, APIURL: e.GitHub.URL(), SHA: sha,
			InstallationID: githubtest.InstallationID})
		waiting := func() bool {
			return e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'protection_review' AND state = 'scheduled'`) == 1
		}
		e.Deliver("deployment_protection_rule", request)
		e.WaitFor("the review to wait for the gate", 20*time.Second, waiting)
		e.Deliver("deployment_protection_rule", request) // GitHub asks again
		e.WaitFor("the repeat to be processed", 20*time.Second, func() bool {
			return e.Int(`SELECT COUNT(*) FROM deliveries WHERE state = 'queued'`) == 0
		})
		if !waiting() || len(reviewPosts(t, e)) != 0 {
			t.Fatalf("reviews %+v while the gate runs, want none and the review waiting", reviewPosts(t, e))
		}
		if n := e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'protection_review'`); n != 1 {
			t.Fatalf("%d review jobs, want 1", n)
		}

		e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: "success", ExternalID: evaluation})
		moveUp(t, e)
		e.WaitFor("the review", 30*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
		e.Deliver("deployment_protection_rule", request) // and again after the answer
		e.Settle()
		if r := reviewPosts(t, e); len(r) != 1 || r[0].RunID != 970 || r[0].State != "approved" ||
			r[0].Comment != "ripcord: no freeze window is active and the gates passed: ripcord/provenance" {
			t.Errorf("reviews = %+v, want one: run 970 approved by ripcord/provenance", r)
		}
	})
}

// moveUp makes the waiting review look again now, as it would a minute on.
func moveUp(t *testing.T, e *e2etest.Env) {
	t.Helper()
	db, err := store.Open(context.Background(), e.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Write.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind = 'protection_review' AND state = 'scheduled'`); err != nil {
		t.Fatal(err)
	}
}

// A run waits on its gates, and is re-run meanwhile: GitHub asks again for
// the re-run's new deployment. GitHub takes a review by run and
// environment, so the first request's job, waking with the second's, would
// answer the re-run's request with its own decision (its gates' deadline,
// or an answer kept from before a freeze). It leaves the run to the newer
// request's job: one review.
func TestProtectionRuleLeavesARerunsRequestToItsOwnReview(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e, sha, evaluation := gateRunning(t, dbURL)
		request := func(deploymentID int64) []byte { return requestOf(t, e, sha, 971, deploymentID) }
		waiting := func(n int) func() bool {
			return func() bool {
				return e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'protection_review' AND state = 'scheduled'`) == n
			}
		}
		e.Deliver("deployment_protection_rule", request(9101))
		e.WaitFor("the first request to wait for the gate", 20*time.Second, waiting(1))
		e.Deliver("deployment_protection_rule", request(9102)) // the run was re-run
		e.WaitFor("the re-run's request to wait for the gate", 20*time.Second, waiting(2))

		e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: "ripcord/provenance", HeadSHA: sha, Conclusion: "success", ExternalID: evaluation})
		moveUp(t, e)
		e.WaitFor("the review", 30*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
		e.Settle()
		if r := reviewPosts(t, e); len(r) != 1 || r[0].RunID != 971 || r[0].State != "approved" {
			t.Errorf("reviews = %+v, want one: run 971 approved, by the re-run's request", r)
		}
	})
}
