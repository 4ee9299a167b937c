package gatesflow_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

const (
	repo    = "acme/checkout"
	digestA = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestB = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
)

var repoConfig = gatesConfig(`values: {schema: deploy/release.schema.json}
commit_signing: true
process:
  itsm: {body_field: 'CHG[0-9]{7}'}
  qa: {labels: [qa-approved]}`, "prod")

const schema = `{"type":"object","required":["image"],"properties":{"replicas":{"type":"integer","maximum":10}}}`

func release(digest string, replicas int) string {
	return "image:\n  repository: reg.example.com/checkout\n  digest: " + digest + "\nreplicas: " + strconv.Itoa(replicas) + "\n"
}

// openBump puts release(digestA, 3) on main and release(digestB, 3) on
// branch bump-checkout, and opens the pull request of the one onto the
// other: the release most tests here judge. It returns the two heads and
// the pull request's number.
func openBump(e *e2etest.Env, repo string) (base, head string, number int) {
	base = e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", release(digestA, 3))
	head = e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 3))
	return base, head, e.GitHub.OpenPullRequest(repo, "octocat", "bump-checkout", "main", "bump checkout")
}

func TestPullRequestThatChangesTheReleaseFileGetsOneCheckRunPerGate(t *testing.T) {
	t.Parallel()
	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", repoConfig)
	e.GitHub.PutFile(repo, "main", "deploy/release.schema.json", schema)
	base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", release(digestA, 3))
	// A hand-made branch (not release-*): the release file change alone makes it a release.
	head := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", release(digestB, 40))
	number := e.GitHub.OpenPullRequest(repo, "octocat", "bump-checkout", "main", "bump checkout")
	e.Install(repo)

	e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
	want := map[string]string{
		"ripcord/values":         "failure", // replicas 40 is over the schema's maximum
		"ripcord/commit-signing": "failure", // the git revision is unknown: no record names digest B
		"ripcord/itsm":           "failure",
		"ripcord/qa":             "failure",
	}
	e.WaitFor("a check run per gate", 20*time.Second, func() bool { return len(completedRuns(e, head)) == len(want) })
	e.Settle()
	got := completedRuns(e, head)
	for name, conclusion := range want {
		cr, ok := got[name]
		if !ok || cr.Conclusion != conclusion {
			t.Errorf("%s: %+v, want conclusion %s", name, cr, conclusion)
		}
	}
	if len(e.GitHub.CheckRuns(repo)) != len(want) {
		t.Errorf("%d check runs, want exactly one per gate", len(e.GitHub.CheckRuns(repo)))
	}
	if s := got["ripcord/values"].Summary; !strings.Contains(s, "/replicas") {
		t.Errorf("values summary does not name the violation:\n%s", s)
	}

	// A redelivery of the same webhook writes nothing more.
	writes := e.Writes()
	e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
	e.Settle()
	if e.Writes() != writes || len(e.GitHub.CheckRuns(repo)) != len(want) {
		t.Errorf("a second delivery of the same head wrote to GitHub again (%d writes, then %d)", writes, e.Writes())
	}
}

func TestPullRequestThatLeavesTheReleaseAloneGetsNoGates(t *testing.T) {
	t.Parallel()
	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", repoConfig)
	base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", release(digestA, 3))
	head := e.GitHub.PutFile(repo, "docs", "README.md", "hello\n")
	number := e.GitHub.OpenPullRequest(repo, "octocat", "docs", "main", "docs")
	e.Install(repo)
	e.Deliver("pull_request", pullRequest(t, number, head, base, "docs"))
	e.Settle()
	if n := len(e.GitHub.CheckRuns(repo)); n != 0 {
		t.Fatalf("%d check runs on a PR that changes no release, want 0", n)
	}
}

func completedRuns(e *e2etest.Env, sha string) map[string]githubtest.CheckRun {
	out := map[string]githubtest.CheckRun{}
	for _, cr := range e.GitHub.CheckRuns(repo) {
		if cr.HeadSHA == sha && cr.Status == "completed" {
			out[cr.Name] = cr
		}
	}
	return out
}

func pullRequest(t *testing.T, number int, head, base, branch string) []byte {
	return e2etest.Edit(t, githubtest.LoadPayload(t, "pull_request", "opened.payload.json"), func(m map[string]any) {
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		m["number"] = number
		pr := m["pull_request"].(map[string]any)
		pr["number"] = number
		pr["head"].(map[string]any)["sha"], pr["head"].(map[string]any)["ref"] = head, branch
		pr["base"].(map[string]any)["sha"], pr["base"].(map[string]any)["ref"] = base, "main"
		r := m["repository"].(map[string]any)
		r["full_name"], r["name"] = repo, "checkout"
		r["owner"].(map[string]any)["login"] = "acme"
	})
}

// waitForJob waits, up to within, until one job of kind is in one of states
// (River's job states), and fails the test naming what it waited for.
func waitForJob(e *e2etest.Env, what string, within time.Duration, kind string, states ...string) {
	e.T.Helper()
	q := `SELECT COUNT(*) FROM river_job WHERE kind = $1 AND state IN ('` + strings.Join(states, "', '") + `')`
	e.WaitFor(what, within, func() bool { return e.Int(q, kind) == 1 })
}

// retryNow runs at once the retry the job of kind waits for (the tests hold
// retries off with a long RetryBase), with set, a list of river_job columns
// and values ("attempt = 7", or empty), making it the attempt they choose.
func retryNow(t *testing.T, dbURL, kind, set string) {
	t.Helper()
	if set != "" {
		set += ", "
	}
	if _, err := testdb.Open(t, dbURL).Write.Exec(`UPDATE river_job SET `+set+`scheduled_at = created_at
		WHERE kind = $1 AND state = 'retryable'`, kind); err != nil {
		t.Fatal(err)
	}
}

// policyGateConfig is gatesConfig with one gate, a policy validation
// service at url.
func policyGateConfig(url string, envs ...string) string {
	return gatesConfig("process:\n  policy_validation: {url: \""+url+"\"}", envs...)
}

// gatesConfig is a .github/ripcord.yml whose app checkout has gates (the
// YAML under its gates: key, unindented) and each of envs an environment
// (on the cluster <env>-eu) that rolls back by pull request.
func gatesConfig(gates string, envs ...string) string {
	var b strings.Builder
	b.WriteString("version: 1\napps:\n  checkout:\n    gates:\n")
	for _, l := range strings.Split(gates, "\n") {
		b.WriteString("      " + l + "\n")
	}
	b.WriteString("    environments:\n")
	for _, env := range envs {
		fmt.Fprintf(&b, "      %s:\n        cluster: %s-eu\n        rollback: {mode: pull-request, file: deploy/%s.yaml, fields: {image: image.repository, digest: image.digest}}\n",
			env, env, env)
	}
	return b.String()
}

// onlyTheRunShown checks that the run the evaluation showed in progress is
// the only check run: the failure that completes it was not made beside it.
func onlyTheRunShown(t *testing.T, e *e2etest.Env) {
	t.Helper()
	if n := len(e.GitHub.CheckRuns(repo)); n != 1 {
		t.Errorf("%d check runs, want only the one the evaluation showed in progress", n)
	}
}

// allCompleted checks that no check run of the repository is left in
// progress.
func allCompleted(t *testing.T, e *e2etest.Env) {
	t.Helper()
	for _, r := range e.GitHub.CheckRuns(repo) {
		if r.Status != "completed" {
			t.Errorf("%s of %s left %s", r.Name, r.ExternalID, r.Status)
		}
	}
}
