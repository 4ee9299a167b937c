package ghclient

import "testing"

func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		name, path, want string
	}{
		{"re-run of failed jobs", "/repos/acme/api/actions/runs/123456789/rerun-failed-jobs", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"},
		{"re-run of a whole run", "/repos/acme/api/actions/runs/42/rerun", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun"},
		{"re-run of one job", "/repos/acme/api/actions/jobs/7/rerun", "/repos/{owner}/{repo}/actions/jobs/{job_id}/rerun"},
		{"workflow run", "/repos/acme/api/actions/runs/42", "/repos/{owner}/{repo}/actions/runs/{run_id}"},
		{"dispatch by file name", "/repos/acme/api/actions/workflows/deploy.yml/dispatches", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"},
		{"config file in a folder", "/repos/acme/api/contents/.github/ripcord.yml", "/repos/{owner}/{repo}/contents/{path}"},
		{"file at the root", "/repos/acme/api/contents/release.yaml", "/repos/{owner}/{repo}/contents/{path}"},
		{"branch ref with a slash", "/repos/acme/api/git/refs/heads/ripcord/rollback-42", "/repos/{owner}/{repo}/git/refs/{ref}"},
		{"create a ref", "/repos/acme/api/git/refs", "/repos/{owner}/{repo}/git/refs"},
		{"single ref read", "/repos/acme/api/git/ref/heads/main", "/repos/{owner}/{repo}/git/ref/{ref}"},
		{"git commit by sha", "/repos/acme/api/git/commits/3f2a9c0d", "/repos/{owner}/{repo}/git/commits/{commit_sha}"},
		{"check run update", "/repos/acme/api/check-runs/99", "/repos/{owner}/{repo}/check-runs/{check_run_id}"},
		{"comment on a PR", "/repos/acme/api/issues/12/comments", "/repos/{owner}/{repo}/issues/{issue_number}/comments"},
		{"reaction on a comment is not an issue number", "/repos/acme/api/issues/comments/5/reactions", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"},
		{"repository comment list is not issue 'comments'", "/repos/acme/api/issues/comments", "/repos/{owner}/{repo}/issues/comments"},
		{"latest release is not a release id", "/repos/acme/api/releases/latest", "/repos/{owner}/{repo}/releases/latest"},
		{"collaborator permission", "/repos/acme/api/collaborators/octocat/permission", "/repos/{owner}/{repo}/collaborators/{username}/permission"},
		{"installation token", "/app/installations/1234/access_tokens", "/app/installations/{installation_id}/access_tokens"},
		{"GitHub Enterprise prefix", "/api/v3/repos/acme/api/pulls/3", "/repos/{owner}/{repo}/pulls/{pull_number}"},
		{"trailing slash", "/repos/acme/api/", "/repos/{owner}/{repo}"},
		{"root", "/", "/"},
		{"unknown endpoint keeps known words, numbers become {id}", "/repos/acme/api/actions/runs/42/logs", "/repos/{owner}/{repo}/actions/runs/{id}/{param}"},
		{"unknown endpoint hides names", "/orgs/acme/teams/sre", "/orgs/{param}/{param}/{param}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Route(tc.path); got != tc.want {
				t.Fatalf("Route(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}
