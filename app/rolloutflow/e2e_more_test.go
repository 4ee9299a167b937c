package rolloutflow_test

import (
	"encoding/json"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testbin"
	"github.com/ripcord/ripcord/internal/testdb"
)

func newScene(t *testing.T, config string) *scene {
	t.Helper()
	return &scene{Env: startOn(t, testdb.MigratedURL(t, "sqlite"), config, "admin")}
}

// The CLI starts a rollout, shows it, is refused the author's approval,
// approves as someone else, and aborts it; the abort applies on_failure.
func TestRolloutCLI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	s := newScene(t, strings.Replace(e2eConfig, "approvals_between: [canary]",
		"approvals_between: [canary]\n          workflow: ship.yml", 1))
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append([]string{"rollout", args[0], "--server", s.URL, "--token", e2etest.Token}, args[1:]...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	code, out := run("start", "--repository", repo, "--app", "checkout", "--environment", "prod", "--version", "v9",
		"--cluster", "prod-eu", "--author", "alice")
	m := regexp.MustCompile(`rollout (ro-[0-9a-f]+) of checkout-v9:prod-eu/prod`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("ripcord rollout start: exit %d\n%s", code, out)
	}
	s.id = m[1]
	s.WaitFor("the canary's dispatch", wait, func() bool { return len(s.GitHub.Dispatches(repo)) == 1 })
	if d := s.GitHub.Dispatches(repo)[0]; d.Workflow != "ship.yml" || d.Inputs["version"] != "v9" {
		t.Errorf("dispatch %+v, want ship.yml with version v9", d)
	}
	s.finish(1)
	s.WaitFor("the approval", wait, func() bool { return s.status().Rollout.Status == rolloutflow.PausedApproval })

	if code, out := run("approve", "--user", "alice", s.id); code == 0 || !strings.Contains(out, "cannot approve") {
		t.Errorf("the author approved her own rollout: exit %d\n%s", code, out)
	}
	if code, out := run("status", "--release-id", "checkout-v9:prod-eu/prod"); code != 0 || !strings.Contains(out, "paused-approval") {
		t.Errorf("ripcord rollout status: exit %d\n%s", code, out)
	}
	// A second release of the environment waits for the first, and the
	// environment's list shows both.
	code, out = run("start", "--repository", repo, "--app", "checkout", "--environment", "prod", "--version", "v10",
		"--cluster", "prod-eu")
	if code != 0 || !strings.Contains(out, "paused-queue") || !strings.Contains(out, "paused by rollout "+s.id) {
		t.Errorf("ripcord rollout start of a second release: exit %d\n%s", code, out)
	}
	code, out = run("list", "--app", "checkout", "--environment", "prod", "--unfinished")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 3 ||
		!strings.Contains(lines[1], "checkout-v10:prod-eu/prod") || !strings.Contains(lines[1], "paused-queue") ||
		!strings.HasPrefix(lines[2], s.id) || !strings.Contains(lines[2], "paused-approval") {
		t.Errorf("ripcord rollout list --unfinished: exit %d\n%s", code, out)
	}
	// The api token names the voter, whose own GitHub permission counts.
	if code, out := run("approve", "--user", "visitor", s.id); code == 0 || !strings.Contains(out, "they have read permission on the repository") {
		t.Errorf("a reader approved through the API: exit %d\n%s", code, out)
	}
	if code, out := run("approve", "--user", "bob", s.id); code != 0 || !strings.Contains(out, "approved") {
		t.Fatalf("ripcord rollout approve: exit %d\n%s", code, out)
	}
	s.WaitFor("the second dispatch", wait, func() bool { return len(s.GitHub.Dispatches(repo)) == 2 })
	if code, out := run("abort", "--user", "bob", "--reason", "pager went off", s.id); code != 0 || !strings.Contains(out, "aborted") {
		t.Fatalf("ripcord rollout abort: exit %d\n%s", code, out)
	}
	s.WaitFor("the rollout to fail", wait, func() bool { return s.status().Rollout.Status == rolloutflow.Failed })
	code, out = run("status", s.id)
	if code != 0 || !strings.Contains(out, "aborted by @bob: pager went off") {
		t.Errorf("ripcord rollout status after the abort: exit %d\n%s", code, out)
	}
}

// `/ripcord approve <rollout>` in a comment approves like the button.
func TestApproveCommand(t *testing.T) {
	t.Parallel()
	s := newScene(t, e2eConfig)
	code, body := s.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"repository": "acme/checkout",
		"app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v2", "author": "alice"}`))
	if code != 201 {
		t.Fatalf("POST /api/v1/rollouts answered %d: %s", code, body)
	}
	var st rolloutflow.StatusJSON
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	s.id = st.ID
	s.finish(1)
	s.WaitFor("the approval", wait, func() bool { return s.status().Rollout.Status == rolloutflow.PausedApproval })
	number := s.GitHub.OpenPullRequest(repo, "alice", "main", "main", "release v2")
	s.Deliver("issue_comment", s.IssueComment(e2etest.Comment{Repository: repo, Number: number, ID: 501, User: "bob",
		Body: "/ripcord approve " + s.id}))
	s.WaitFor("the second dispatch", wait, func() bool { return len(s.GitHub.Dispatches(repo)) == 2 })
	s.WaitFor("the reply", wait, func() bool {
		for _, c := range s.GitHub.Comments(repo) {
			if strings.Contains(c.Body, "approved wave canary") {
				return true
			}
		}
		return false
	})
}

// Merging a pull request that changes an environment's release file opens
// the release and starts its rollout, once; the PR's author cannot approve.
func TestMergedReleasePullRequestStartsTheRollout(t *testing.T) {
	t.Parallel()
	s := newScene(t, releaseFileConfig)
	base := s.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: ghcr.io/acme/checkout:v1\n")
	merge := s.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: ghcr.io/acme/checkout:v2\n")
	body := mergedPullRequest(t, base, merge, func(pr map[string]any) {
		pr["user"].(map[string]any)["login"] = "alice"
		pr["merged_by"] = map[string]any{"login": "carol"}
	})
	s.Deliver("pull_request", body)
	s.Deliver("pull_request", body) // a second delivery starts nothing more
	release := "acme/checkout#7:prod-eu/prod"
	s.WaitFor("the rollout of the merged release", wait, func() bool {
		_, b := s.Do("GET", "/api/v1/rollouts?release_id="+url.QueryEscape(release), "", nil)
		var out struct{ Rollouts []rolloutflow.StatusJSON }
		_ = json.Unmarshal(b, &out)
		if len(out.Rollouts) == 1 {
			s.id = out.Rollouts[0].ID
		}
		return s.id != ""
	})
	// Opened at the merge, the release waits for facts from then on: its
	// stall clock (records.MarkMerged) has started.
	if n := s.Int(`SELECT COUNT(*) FROM records WHERE release_id = $1 AND merged_at IS NOT NULL`, release); n != 1 {
		t.Errorf("merged release %s has no merge time: it could never stall", release)
	}
	s.finish(1)
	if d := s.GitHub.Dispatches(repo)[0]; d.Inputs["version"] != "ghcr.io/acme/checkout:v2" || d.Inputs["release_id"] != release {
		t.Errorf("dispatch inputs %v", d.Inputs)
	}
	s.WaitFor("the approval", wait, func() bool { return s.status().Rollout.Status == rolloutflow.PausedApproval })
	for _, who := range []string{"alice", "carol"} {
		code, b := s.Do("POST", "/api/v1/rollouts/"+s.id+"/approve", "application/json", []byte(`{"user": "`+who+`"}`))
		if code != 409 || !strings.Contains(string(b), "cannot approve") {
			t.Errorf("%s (author or merger) approving: %d %s", who, code, b)
		}
	}
	s.settle()
	if n := s.Int(`SELECT COUNT(*) FROM rollouts`); n != 1 {
		t.Errorf("%d rollouts, want 1", n)
	}
}

// An app's environment belongs to the repository of its first release
// (README, POST /api/v1/facts): a merged pull request of another
// repository whose own config declares that app opens no release of it and
// starts no rollout.
func TestMergeInAnotherRepositoryOpensNoReleaseOfAnOwnedApp(t *testing.T) {
	t.Parallel()
	s := newScene(t, releaseFileConfig)
	code, b := s.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "owned-1", "app": "checkout",
		"environment": "prod", "cluster": "prod-eu", "repository": "acme/owner", "image": "ghcr.io/acme/checkout:v0"}`))
	if code != 201 {
		t.Fatalf("opening acme/owner's release: %d %s", code, b)
	}
	base := s.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: ghcr.io/acme/checkout:v1\n")
	merge := s.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: ghcr.io/acme/checkout:v2\n")
	s.Deliver("pull_request", mergedPullRequest(t, base, merge, nil))
	s.WaitFor("the merge job", wait, func() bool {
		return s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = $1 AND state = 'completed'`, rolloutflow.MergeArgs{}.Kind()) == 1
	})
	if n := s.Int(`SELECT COUNT(*) FROM records WHERE app = 'checkout' AND repository = $1`, repo); n != 0 {
		t.Errorf("%d releases of checkout opened for %s, which does not own it; want none", n, repo)
	}
	if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollout_start' AND json_extract(args, '$.release_id') <> 'owned-1'`); n != 0 {
		t.Errorf("%d rollout starts queued beside acme/owner's release, want none", n)
	}
}

// The rollouts API names what is wrong.
func TestRolloutsAPIAnswersNameTheField(t *testing.T) {
	t.Parallel()
	s := newScene(t, e2eConfig)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"no repository and no earlier release to take it from", "POST", "/api/v1/rollouts",
			`{"app": "checkout", "environment": "prod", "version": "v2"}`, 400, "repository"},
		{"version missing", "POST", "/api/v1/rollouts", `{"app": "checkout", "environment": "prod"}`, 400, "version"},
		{"a release_id that names no release", "POST", "/api/v1/rollouts", `{"release_id": "nope"}`, 400, "release_id"},
		{"nothing to start", "POST", "/api/v1/rollouts", `{"author": "alice"}`, 400, "app"},
		{"an unknown field", "POST", "/api/v1/rollouts", `{"app": "checkout", "env": "prod"}`, 400, "env"},
		{"an environment without rollout", "POST", "/api/v1/rollouts", `{"repository": "acme/checkout", "app": "checkout",
			"environment": "staging", "cluster": "eu", "version": "v2"}`, 422, "environment"},
		{"an unknown rollout", "GET", "/api/v1/rollouts/ro-nope", "", 404, "id"},
		{"a list without release_id", "GET", "/api/v1/rollouts", "", 400, "release_id"},
		{"approving an unknown rollout", "POST", "/api/v1/rollouts/ro-nope/approve", `{"user": "bob"}`, 404, "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.Do(tc.method, tc.path, "application/json", []byte(tc.body))
			var e struct{ Error, Field string }
			_ = json.Unmarshal(body, &e)
			if code != tc.status || e.Field != tc.field || e.Error == "" {
				t.Errorf("%d %s, want %d naming %q", code, body, tc.status, tc.field)
			}
		})
	}
	// The id is named, with what to send instead.
	if _, body := s.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"release_id": "nope"}`)); !strings.Contains(string(body),
		`release_id: no release \"nope\" is stored`) || !strings.Contains(string(body), "app, environment and version") {
		t.Errorf("a release_id that names no release: %s, want it named, and app, environment and version as what to send instead", body)
	}
	// Repository and cluster default to the newest release's.
	code, body := s.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "r1:prod-eu/prod",
		"app": "checkout", "environment": "prod", "cluster": "prod-eu", "repository": "acme/checkout", "image": "v1"}`))
	if code != 201 {
		t.Fatalf("POST release: %d %s", code, body)
	}
	code, body = s.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"app": "checkout", "environment": "prod", "version": "v2"}`))
	var st rolloutflow.StatusJSON
	_ = json.Unmarshal(body, &st)
	if code != 201 || st.ReleaseID != "checkout-v2:prod-eu/prod" || st.Repository != repo {
		t.Fatalf("POST rollout with defaults: %d %s", code, body)
	}
	code, body = s.Do("POST", "/api/v1/rollouts/"+st.ID+"/approve", "application/json", []byte(`{"user": "bob"}`))
	if code != 409 || !strings.Contains(string(body), "not waiting for an approval") {
		t.Errorf("approving a running rollout: %d %s", code, body)
	}
}

// Merging a rollback pull request that ripcord opened (its release is
// opened, kind rollback, with the pull request's number) rolls out that
// rollback release itself: a rollback is a release like any other (seed
// 003, decision 7), so its merge deploys it as any release of the
// environment is deployed, and the record stays one, keeping its kind and
// rollback_of, so that its facts complete the rollback. No promote release
// is opened beside it.
func TestMergedRollbackPullRequestRollsOutTheRollbackRelease(t *testing.T) {
	t.Parallel()
	s := newScene(t, releaseFileConfig)
	base := s.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: ghcr.io/acme/checkout:v2\n")
	merge := s.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image: ghcr.io/acme/checkout:v1\n")
	const rollback = "rb1:prod-eu/prod"
	code, b := s.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "`+rollback+`",
		"app": "checkout", "environment": "prod", "cluster": "prod-eu", "repository": "acme/checkout",
		"image": "ghcr.io/acme/checkout:v1", "git_revision": "`+headSHA+`", "kind": "rollback",
		"rollback_of": "r2:prod-eu/prod", "rollback_reason": "v2 leaks memory",
		"pr": {"url": "https://github.com/acme/checkout/pull/7", "number": 7}}`))
	if code != 201 {
		t.Fatalf("POST rollback release answered %d: %s", code, b)
	}
	s.settle()
	body := mergedPullRequest(t, base, merge, func(pr map[string]any) {
		pr["html_url"] = "https://github.com/acme/checkout/pull/7"
		pr["user"].(map[string]any)["login"] = "alice"
		pr["merged_by"] = map[string]any{"login": "carol"}
	})
	s.Deliver("pull_request", body)
	s.settle()
	if n, other := s.Int(`SELECT COUNT(*) FROM records`), s.String(`SELECT release_id FROM records WHERE release_id <> $1`, rollback); n != 1 {
		t.Errorf("%d releases after the merge (another: %q), want only the rollback %s", n, other, rollback)
	}
	s.WaitFor("the rollout of the rollback release", wait, func() bool {
		_, b := s.Do("GET", "/api/v1/rollouts?release_id="+url.QueryEscape(rollback), "", nil)
		var out struct{ Rollouts []rolloutflow.StatusJSON }
		_ = json.Unmarshal(b, &out)
		if len(out.Rollouts) == 1 {
			s.id = out.Rollouts[0].ID
		}
		return s.id != ""
	})
	s.finish(1)
	if d := s.GitHub.Dispatches(repo)[0]; d.Inputs["version"] != "ghcr.io/acme/checkout:v1" || d.Inputs["release_id"] != rollback {
		t.Errorf("dispatch inputs %v, want the rollback's image and release id", d.Inputs)
	}
	if k := s.String(`SELECT kind || ' of ' || rollback_of FROM records WHERE release_id = $1`, rollback); k != "rollback of r2:prod-eu/prod" {
		t.Errorf("rollback release is %q, want still a rollback of r2", k)
	}
	// The ripcord/rollout check run goes on the rollback pull request's
	// merge commit, the change its reviewers merged, not on the rollback's
	// git_revision (the old commit it returns to).
	if sha, from := s.String(`SELECT head_sha FROM rollouts WHERE release_id = $1`, rollback),
		s.String(`SELECT snapshot FROM rollouts WHERE release_id = $1`, rollback); sha != merge || !strings.Contains(from, "merge commit") {
		t.Errorf("the rollback's rollout check run goes on %s (the rollback's git_revision is %s), want the merge commit %s; snapshot %s",
			sha, headSHA, merge, from)
	}
	s.settle()
}

// releaseFileConfig is e2eConfig with prod's release file: rollback pull
// requests edit deploy/prod.yaml, and a merge that changes it is a release.
var releaseFileConfig = strings.Replace(e2eConfig, "        targets:", `        rollback:
          mode: pull-request
          file: deploy/prod.yaml
          fields: {image: image}
        targets:`, 1)

// mergedPullRequest is GitHub's pull_request closed event for pull request
// 7 of repo, merged as merge on top of base; edit, if any, changes the
// pull request further.
func mergedPullRequest(t *testing.T, base, merge string, edit func(pr map[string]any)) []byte {
	t.Helper()
	return e2etest.Edit(t, githubtest.LoadPayload(t, "pull_request", "closed.payload.json"), func(m map[string]any) {
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		m["number"] = 7
		pr := m["pull_request"].(map[string]any)
		pr["number"], pr["merged"], pr["merge_commit_sha"] = 7, true, merge
		pr["base"].(map[string]any)["sha"] = base
		r := m["repository"].(map[string]any)
		r["full_name"], r["name"] = repo, "checkout"
		if edit != nil {
			edit(pr)
		}
	})
}
