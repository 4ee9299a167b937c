package gatesflow_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/gates/attest/attesttest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A gate's own read of GitHub (commit-signing's commit, sast's analyses,
// the values schema or provenance's key on the default branch) that meets
// GitHub's rate limit is GitHub's "later", not the gate's "could not
// decide": no errored run tells the reviewer the change failed a gate, and
// no other gate's verdict is written beside it. The evaluation waits until
// the time GitHub names, counting no attempt, and once the limit lifts
// every gate gets its own verdict.
func TestGatesOwnReadsWaitForGitHubsRateLimit(t *testing.T) {
	t.Parallel()
	const schemaPath, keyPath = "deploy/release.schema.json", ".github/cosign.pub"
	all := func(map[string]string) bool { return true }
	for _, tc := range []struct {
		name string
		// gates configures the gate that reads, beside qa (which reads
		// nothing of GitHub).
		gates string
		// bump opens the pull request (openBump when nil), prepare sets
		// up what the gate reads, lifted what GitHub answers once the
		// limit lifts (when the fake does not answer it by default).
		bump    func(t *testing.T, e *e2etest.Env) (base, head string, number int, branch string)
		prepare func(e *e2etest.Env, head string)
		lifted  func(e *e2etest.Env, head string)
		// route is the read GitHub refuses, only where refused says so.
		route   string
		refused func(p map[string]string) bool
		// gate is the gate that reads it, and its verdict once the limit
		// lifts: conclusion, and what its summary says.
		gate, conclusion, says string
	}{
		{name: "commit-signing's commit", gates: "commit_signing: true",
			prepare: func(e *e2etest.Env, head string) { recordCommit(e, head) },
			route:   "GET /repos/{owner}/{repo}/commits/{ref}", refused: all,
			gate: "ripcord/commit-signing", conclusion: "failure", says: "is not verified by GitHub: unsigned"},
		{name: "sast's analyses", gates: "sast: {severity: high}",
			prepare: func(e *e2etest.Env, head string) { recordCommit(e, head) },
			lifted: func(e *e2etest.Env, head string) {
				cs := githubtest.ServeCodeScanning(e.GitHub)
				cs.Analyzed(repo, "refs/heads/bump-checkout")
				cs.AnalyzedCommit(repo, "refs/heads/bump-checkout", head)
			},
			route: "GET /repos/{owner}/{repo}/code-scanning/analyses", refused: all,
			gate: "ripcord/sast", conclusion: "success", says: "no open code-scanning alert at or above high"},
		{name: "the values schema", gates: "values: {schema: " + schemaPath + "}",
			prepare: func(e *e2etest.Env, _ string) { e.GitHub.PutFile(repo, "main", schemaPath, schema) },
			route:   "GET /repos/{owner}/{repo}/contents/{path}", refused: func(p map[string]string) bool { return p["path"] == schemaPath },
			gate: "ripcord/values", conclusion: "success", says: "is valid against " + schemaPath},
		{name: "provenance's key", gates: "provenance: {keys: [" + keyPath + "], builder_id: \"" + attesttest.Builder + "\"}",
			bump: func(t *testing.T, e *e2etest.Env) (string, string, int, string) {
				key := attesttest.NewSigner(t)
				img := attesttest.PushImage(t, attesttest.StartRegistry(t), "acme/checkout")
				attesttest.Signed(t, img).Sign(key, nil).
					Attest(key, "slsaprovenance", attesttest.ProvenanceV02(attesttest.Builder, attesttest.Source), nil).Push()
				e.GitHub.PutFile(repo, "main", keyPath, string(key.PEM))
				base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image:\n  repository: x\n  digest: "+digestA+"\n")
				head := e.GitHub.PutFile(repo, "release-prod-1.5.0", "deploy/prod.yaml",
					"image:\n  repository: "+img.Context().String()+"\n  digest: "+img.DigestStr()+"\n")
				return base, head, e.GitHub.OpenPullRequest(repo, "octocat", "release-prod-1.5.0", "main", "Release checkout 1.5.0"), "release-prod-1.5.0"
			},
			route: "GET /repos/{owner}/{repo}/contents/{path}", refused: func(p map[string]string) bool { return p["path"] == keyPath },
			gate: "ripcord/provenance", conclusion: "success", says: attesttest.Builder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				e := e2etest.Start(t, dbURL, app.Options{})
				e.CheckRequestsAtCleanup(t)
				e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig(tc.gates+"\nprocess:\n  qa: {labels: [qa-approved]}", "prod"))
				var base, head, branch string
				var number int
				if tc.bump != nil {
					base, head, number, branch = tc.bump(t, e)
				} else {
					base, head, number = openBump(e, repo)
					branch = "bump-checkout"
				}
				e.Install(repo)
				if tc.prepare != nil {
					tc.prepare(e, head)
				}
				var lift atomic.Bool
				var refused atomic.Int32
				start := time.Now().Truncate(time.Second)
				e.GitHub.RefuseForRateLimitWhere(tc.route, tc.refused, &lift, &refused, "Retry-After", "1500")

				e.Deliver("pull_request", pullRequest(t, number, head, base, branch))
				// The evaluation ran and stopped: waiting, or (the old way)
				// its verdicts written.
				e.WaitFor("the gate's read to meet the limit", 30*time.Second, func() bool {
					return refused.Load() > 0 && e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_evaluate'`) > 0 &&
						e.Int(`SELECT COUNT(*) FROM river_job WHERE kind LIKE 'gates_%' AND state IN ('available', 'running')`) == 0
				})
				end := time.Now()
				e.WaitsForLimit("gates_evaluate", len(e.Jobs("gates_evaluate")), start, end, 25*time.Minute)
				if n := e.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'gates_gave_up'`); n != 0 {
					t.Errorf("%d give-ups queued while GitHub's rate limit holds, want none", n)
				}
				for _, cr := range gateCheckRuns(e) {
					t.Errorf("check run %s written while GitHub's rate limit holds (%s %s: %q), want none", cr.Name, cr.Status, cr.Conclusion, cr.Title)
				}
				if t.Failed() {
					return
				}

				// The limit lifts at the time named; the evaluation runs then
				// (here made due at once) and each gate gets its verdict.
				lift.Store(true)
				if tc.lifted != nil {
					tc.lifted(e, head)
				}
				e.Restart()
				e.Exec(`UPDATE river_job SET scheduled_at = created_at WHERE kind LIKE 'gates_%' AND state = 'scheduled'`)
				e.WaitFor("the gates' verdicts", 30*time.Second, func() bool { return len(completedRuns(e, head)) == 2 })
				e.Settle()
				if cr := completedRuns(e, head)[tc.gate]; cr.Conclusion != tc.conclusion || !strings.Contains(cr.Summary, tc.says) {
					t.Errorf("%s after the limit lifted: %s %q\n%s\nwant %s, saying %q", tc.gate, cr.Conclusion, cr.Title, cr.Summary, tc.conclusion, tc.says)
				}
				if n := len(gateCheckRuns(e)); n != 2 {
					t.Errorf("%d check runs, want one per gate", n)
				}
			})
		})
	}
}

// recordCommit registers the release of digestB, the digest openBump's
// pull request pins, as built from commit: the git revision the gates that
// read the release's commit ask GitHub about.
func recordCommit(e *e2etest.Env, commit string) {
	e.Fact(map[string]any{"source": "task", "repository": repo, "workflow_run_id": 9100, "run_attempt": 1,
		"status": "in_progress", "app": "checkout", "environment": "prod", "cluster": "prod-eu", "release_id": "rel-1",
		"images": []string{"reg.example.com/checkout@" + digestB}, "metadata": map[string]string{"commit": commit},
		"observed_at": time.Now().UTC().Format(time.RFC3339Nano)})
}

// gateCheckRuns are the check runs of the gates, not the release's own
// (ripcord/release, which the release's record has).
func gateCheckRuns(e *e2etest.Env) []githubtest.CheckRun {
	var out []githubtest.CheckRun
	for _, cr := range e.GitHub.CheckRuns(repo) {
		if cr.Name != "ripcord/release" {
			out = append(out, cr)
		}
	}
	return out
}
