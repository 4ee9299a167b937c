package gatesflow_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// twoEnvironmentsConfig releases checkout to prod and staging from one pull
// request; both have the qa gate, and each a values schema of its own, read
// from the default branch.
const twoEnvironmentsConfig = `version: 1
apps:
  checkout:
    gates:
      process:
        qa: {labels: [qa-approved]}
    environments:
      prod:
        cluster: prod-eu
        rollback: {mode: pull-request, file: deploy/prod.yaml, fields: {image: image.repository, digest: image.digest}}
        gates:
          values: {schema: deploy/prod.schema.json}
      staging:
        cluster: staging-eu
        rollback: {mode: pull-request, file: deploy/staging.yaml, fields: {image: image.repository, digest: image.digest}}
        gates:
          values: {schema: deploy/staging.schema.json}
`

// An evaluation of two environments whose second meets GitHub's rate limit
// (reading staging's values schema) waits, and once the limit lifts judges
// the environment it could not: prod, judged and queued before the wait,
// is not evaluated again (its schema is read once, and a change to it
// during the wait makes no second verdict of the evaluation), and each
// environment's gate gets one verdict, its check run written once.
func TestAnEvaluationThatWaitsForTheLimitWritesEachEnvironmentsVerdictsOnce(t *testing.T) {
	t.Parallel()
	const prodSchema, stagingSchema = "deploy/prod.schema.json", "deploy/staging.schema.json"
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e := e2etest.Start(t, dbURL, app.Options{})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", twoEnvironmentsConfig)
		e.GitHub.PutFile(repo, "main", prodSchema, schema)
		e.GitHub.PutFile(repo, "main", stagingSchema, schema)
		e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", release(digestA, 3))
		base := e.GitHub.PutFile(repo, "main", "deploy/staging.yaml", release(digestA, 3))
		e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 3))
		head := e.GitHub.PutFile(repo, "bump-checkout", "deploy/staging.yaml", release(digestB, 3))
		number := e.GitHub.OpenPullRequest(repo, "octocat", "bump-checkout", "main", "bump checkout")
		e.Install(repo)
		var lift atomic.Bool
		var refused atomic.Int32
		start := time.Now().Truncate(time.Second)
		e.GitHub.RefuseForRateLimitWhere("GET /repos/{owner}/{repo}/contents/{path}",
			func(p map[string]string) bool { return p["path"] == stagingSchema }, &lift, &refused, "Retry-After", "1500")

		e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
		e.WaitFor("staging's schema read to meet the limit", 30*time.Second, func() bool {
			return refused.Load() > 0 && e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_evaluate'`) > 0 &&
				e.Int(`SELECT COUNT(*) FROM river_job WHERE kind LIKE 'gates_%' AND state IN ('available', 'running')`) == 0
		})
		end := time.Now()
		e.WaitsForLimit("gates_evaluate", 1, start, end, 25*time.Minute)
		for _, w := range checkRunWrites(t, e) {
			if strings.HasPrefix(w, "checkout/staging ") {
				t.Errorf("staging's check run written while its evaluation waits for the limit: %s", w)
			}
		}

		// prod's schema changes on the default branch during the wait: its
		// verdict judged again would differ (replicas 3 over a maximum of 2),
		// a second verdict of the same evaluation.
		e.GitHub.PutFile(repo, "main", prodSchema, strings.Replace(schema, `"maximum":10`, `"maximum":2`, 1))
		lift.Store(true)
		e.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind LIKE 'gates_%' AND state = 'scheduled'`)
		e.WaitFor("every environment's verdicts", 30*time.Second, func() bool {
			return e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_evaluate' AND state = 'completed'`) == 1
		})
		e.Settle()
		want := []string{"checkout/prod ripcord/qa", "checkout/prod ripcord/values", "checkout/staging ripcord/qa", "checkout/staging ripcord/values"}
		writes := checkRunWrites(t, e)
		got := map[string]int{}
		for _, w := range writes {
			got[w]++
		}
		for _, w := range want {
			if got[w] != 1 {
				t.Errorf("%s written %d times, want once\nwrites: %q", w, got[w], writes)
			}
		}
		if len(writes) != len(want) {
			t.Errorf("check-run writes %q, want one for each of %d gates", writes, len(want))
		}
		if n := e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_report'`); n != len(want) {
			t.Errorf("%d verdicts queued, want %d: one per environment's gate", n, len(want))
		}
		if n := schemaReads(e, prodSchema); n != 1 {
			t.Errorf("prod's schema read %d times, want once: prod was judged before the wait, and not again", n)
		}
		for _, cr := range gateCheckRuns(e) {
			if cr.Status != "completed" || cr.Conclusion != map[string]string{"ripcord/qa": "failure", "ripcord/values": "success"}[cr.Name] {
				t.Errorf("%s (%s) %s %s %q, want qa failed (no qa-approved label) and values passed", cr.Name, cr.ExternalID, cr.Status, cr.Conclusion, cr.Title)
			}
		}
	})
}

// schemaReads counts the reads of path GitHub answered (any status but the
// rate limit's refusal).
func schemaReads(e *e2etest.Env, path string) int {
	n := 0
	for _, r := range e.GitHub.Requests() {
		if r.Method == http.MethodGet && r.Route == "/repos/{owner}/{repo}/contents/{path}" && r.Params["path"] == path && r.Status != http.StatusForbidden {
			n++
		}
	}
	return n
}

// checkRunWrites names each check-run create (POST) and update (PATCH) the
// fake GitHub took, as "<app>/<environment> <gate>": the scope read from the
// external id of the run created, or of the run updated.
func checkRunWrites(t *testing.T, e *e2etest.Env) []string {
	t.Helper()
	external := map[string]string{} // check run id -> external id
	for _, cr := range e.GitHub.CheckRuns(repo) {
		external[strconv.FormatInt(cr.ID, 10)] = cr.ExternalID
	}
	var out []string
	for _, r := range e.GitHub.Requests() {
		create := r.Method == http.MethodPost && r.Route == "/repos/{owner}/{repo}/check-runs"
		update := r.Method == http.MethodPatch && r.Route == "/repos/{owner}/{repo}/check-runs/{check_run_id}"
		if r.Status >= 300 || !create && !update {
			continue
		}
		var body struct {
			Name       string `json:"name"`
			ExternalID string `json:"external_id"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("check-run write %s: %v", r.Body, err)
		}
		id := body.ExternalID
		if update {
			id = external[r.Params["check_run_id"]]
		}
		if body.Name == "ripcord/release" {
			continue
		}
		out = append(out, scopeOf(id)+" "+body.Name)
	}
	return out
}

// scopeOf is the "<app>/<environment>" of a gate run's external id,
// "<repository>#<pull request>@<sha> <app>/<environment> <trigger> seq=<n>".
func scopeOf(externalID string) string {
	f := strings.Fields(externalID)
	if len(f) < 2 {
		return "?"
	}
	return f[1]
}
