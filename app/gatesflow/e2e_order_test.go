package gatesflow_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// policyService answers the policy_validation gate: each request gets the
// answer queued for its turn, the turn named in hold only once released.
type policyService struct {
	mu       sync.Mutex
	answers  []string
	calls    int
	hold     int
	held     chan struct{} // closed when the held call has arrived
	released chan struct{}
}

func (p *policyService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.calls++
	n := p.calls
	p.mu.Unlock()
	if n == p.hold {
		close(p.held)
		<-p.released
	}
	fmt.Fprintf(w, `{"result": %q, "reason": "answer %d"}`, p.answers[n-1], n)
}

// Two evaluations of one commit can finish out of order: a re-run whose
// policy service is slow (the older evaluation) ends after a later re-run
// (the newer one) has reported. The older one's verdict is stale: it must
// neither win the deployment protection rule nor show as the gate's
// latest run on the commit, and the run it had shown in progress must not
// be left spinning.
func TestAnOlderEvaluationThatEndsLastDoesNotWin(t *testing.T) {
	t.Parallel()
	policy := &policyService{answers: []string{"pass", "pass", "fail"}, hold: 2,
		held: make(chan struct{}), released: make(chan struct{})}
	srv := httptest.NewServer(policy)
	defer srv.Close()
	var answerOnce sync.Once
	answer := func() { answerOnce.Do(func() { close(policy.released) }) }
	defer answer()

	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{Gates: gatesflow.Options{SlowAfter: 50 * time.Millisecond}})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", `version: 1
apps:
  checkout:
    gates:
      values: {schema: deploy/release.schema.json}
      process:
        policy_validation: {url: "`+srv.URL+`"}
    environments:
      prod:
        cluster: prod-eu
        protection_rule: {enabled: true, gates: true}
        rollback:
          mode: pull-request
          file: deploy/prod.yaml
          fields: {image: image.repository, digest: image.digest}
`)
	e.GitHub.PutFile(repo, "main", "deploy/release.schema.json", schema)
	base, head, number := openBump(e, repo)
	e.Install(repo)

	runsOf := func(sha string) []githubtest.CheckRun {
		var out []githubtest.CheckRun
		for _, cr := range e.GitHub.CheckRuns(repo) {
			if cr.HeadSHA == sha {
				out = append(out, cr)
			}
		}
		return out
	}
	count := func(status string) int {
		n := 0
		for _, cr := range runsOf(head) {
			if cr.Status == status {
				n++
			}
		}
		return n
	}

	// The first evaluation passes both gates.
	e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
	e.WaitFor("the first evaluation", 20*time.Second, func() bool { return count("completed") == 2 })
	first := completedRuns(e, head)["ripcord/values"]

	// A re-run: its policy service is slow, so its policy run shows in
	// progress.
	e.Deliver("check_run", rerequested(t, first, number, head, base, false))
	select {
	case <-policy.held:
	case <-time.After(20 * time.Second):
		t.Fatal("the second evaluation never asked the policy service")
	}
	e.WaitFor("the second evaluation's run in progress", 20*time.Second, func() bool { return count("in_progress") == 1 })

	// Another re-run, meanwhile: the policy service refuses now, at once.
	// Its two verdicts also end the second evaluation's run in progress,
	// superseded: the gate does not spin beside its newer verdict.
	e.Deliver("check_run", rerequested(t, first, number, head, base, false))
	e.WaitFor("the third evaluation", 20*time.Second, func() bool { return count("completed") == 5 && count("in_progress") == 0 })

	// The second evaluation's answer comes last, and passes.
	answer()
	e.Settle()

	runs := runsOf(head)
	newest := map[string]githubtest.CheckRun{} // GitHub shows a gate's newest run
	for _, cr := range runs {
		if cr.ID > newest[cr.Name].ID {
			newest[cr.Name] = cr
		}
	}
	if cr := newest["ripcord/policy-validation"]; cr.Conclusion != "failure" || !strings.Contains(cr.Summary, "answer 3") {
		t.Errorf("newest ripcord/policy-validation run: %s %q, want the newest evaluation's failure (answer 3)", cr.Conclusion, cr.Summary)
	}
	if v, p := newest["ripcord/values"], newest["ripcord/policy-validation"]; v.ExternalID != p.ExternalID {
		t.Errorf("the newest runs of the two gates are of different evaluations:\n  values: %s\n  policy-validation: %s", v.ExternalID, p.ExternalID)
	}
	for _, cr := range runs {
		if cr.Status != "completed" {
			t.Errorf("%s of %s left %s", cr.Name, cr.ExternalID, cr.Status)
		}
	}

	// The deployment protection rule judges the newest evaluation.
	e.Deliver("deployment_protection_rule", githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
		Repo: repo, Environment: "prod", RunID: 77, APIURL: e.GitHub.URL(), SHA: head,
		InstallationID: githubtest.InstallationID}))
	e.WaitFor("the review", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
	reviews := e.GitHub.GateReviews(repo)
	if len(reviews) != 1 || reviews[0].State != "rejected" || !strings.Contains(reviews[0].Comment, "ripcord/policy-validation") {
		t.Errorf("review %+v, want rejected for the newest evaluation's ripcord/policy-validation", reviews)
	}
	if t.Failed() {
		slices.SortFunc(runs, func(a, b githubtest.CheckRun) int { return int(a.ID - b.ID) })
		for _, cr := range runs {
			t.Logf("run %d %s %s %s %q %s", cr.ID, cr.Name, cr.Status, cr.Conclusion, cr.Title, cr.ExternalID)
		}
	}
}
