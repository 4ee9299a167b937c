package protection_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// GitHub's rate limit on the answer (a 403 with Retry-After, past what the
// client holds a request) is GitHub's "later", not its refusal: the review
// does not end there, the deployment left waiting until GitHub times it
// out, nor spend its attempts. It waits until the time GitHub names,
// counting no attempt, and posts the answer once the limit has lifted.
func TestProtectionRuleWaitsForGitHubsRateLimitOnItsAnswer(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		start := time.Now()
		e, _, lift := answerMeetsTheLimit(t, dbURL, 960)
		end := time.Now()
		e.WaitsForLimit("protection_review", 1, start, end, 25*time.Minute)

		// The limit lifts at the time named: here made due at once.
		lift.Store(true)
		e.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind = 'protection_review' AND state = 'scheduled'`)
		e.WaitFor("the answer GitHub takes", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
		e.Settle()
		if got := e.GitHub.GateReviews(repo); len(got) != 1 || got[0].RunID != 960 || got[0].State != "approved" {
			t.Errorf("reviews = %+v, want run 960 approved once", got)
		}
		if s := e.String(`SELECT state FROM river_job WHERE kind = 'protection_review'`); s != "completed" {
			t.Errorf("review job %s, want completed", s)
		}
	})
}

// GitHub refusing the answer for its rate limit took nothing, so the
// answer posted after the wait is decided then, not the one decided before
// it: a freeze that began during the wait rejects the deployment. (Without
// a change during the wait the answer is the same, as above.)
func TestProtectionRuleDecidesAgainAfterGitHubsRateLimit(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e, now, lift := answerMeetsTheLimit(t, dbURL, 961)
		if posts := reviewPosts(t, e); len(posts) != 1 || posts[0].State != "approved" {
			t.Fatalf("posts before the wait = %+v, want one approved (no freeze yet)", posts)
		}

		// A freeze begins during the wait; then the limit lifts.
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config(now.Add(-time.Hour), now.Add(time.Hour), false))
		lift.Store(true)
		e.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind = 'protection_review' AND state = 'scheduled'`)
		e.WaitFor("the answer GitHub takes", 20*time.Second, func() bool { return len(e.GitHub.GateReviews(repo)) > 0 })
		e.Settle()
		got := e.GitHub.GateReviews(repo)
		if len(got) != 1 || got[0].RunID != 961 || got[0].State != "rejected" || !strings.Contains(got[0].Comment, "year-end freeze") {
			t.Errorf("reviews = %+v, want run 961 rejected once for the year-end freeze", got)
		}
		if posts := reviewPosts(t, e); len(posts) != 2 {
			t.Errorf("posts = %+v, want the refused one and the one after the wait", posts)
		}
		if s := e.String(`SELECT state FROM river_job WHERE kind = 'protection_review'`); s != "completed" {
			t.Errorf("review job %s, want completed", s)
		}
	})
}

// answerMeetsTheLimit starts a server whose repository has a freeze
// tomorrow (none now), has GitHub refuse answers to deployment protection
// rules for its rate limit until lift is set, delivers run runID's rule,
// and waits until its review job waits for the limit. now is the scene's
// time.
func answerMeetsTheLimit(t *testing.T, dbURL string, runID int64) (e *e2etest.Env, now time.Time, lift *atomic.Bool) {
	t.Helper()
	now = time.Now().UTC().Truncate(time.Second)
	e = e2etest.Start(t, dbURL, app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config(now.Add(24*time.Hour), now.Add(48*time.Hour), false))
	sha := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: shop:1\n")
	lift = new(atomic.Bool)
	var refused atomic.Int32
	e.GitHub.RefuseForRateLimit("POST /repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule",
		lift, &refused, "Retry-After", "1500")
	e.Install(repo)
	e.Deliver("deployment_protection_rule", githubtest.BuildDeploymentProtectionRule(t, githubtest.ProtectionRule{
		Repo: repo, Environment: "production", RunID: runID, APIURL: e.GitHub.URL(), SHA: sha,
		InstallationID: githubtest.InstallationID}))
	e.WaitFor("the answer to meet the limit", 20*time.Second, func() bool {
		return refused.Load() > 0 &&
			e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'protection_review' AND state = 'scheduled'`) == 1
	})
	return e, now, lift
}
