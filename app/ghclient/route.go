package ghclient

import "strings"

// routeTemplates are the REST endpoints ripcord calls, in GitHub's own
// OpenAPI spelling. A segment "{name}" stands for one path segment, a final
// "{name...}" for the rest of the path (a file path, a ref like heads/main).
// The first template that matches wins, so a static segment goes before a
// parameter in the same place.
var routeTemplates = compileRoutes(
	"/app",
	"/app/installations",
	"/app/installations/{installation_id}",
	"/app/installations/{installation_id}/access_tokens",
	"/app-manifests/{code}/conversions",
	"/installation/repositories",
	"/orgs/{org}/installation",
	"/users/{username}/installation",
	"/user",
	"/user/installations",
	"/rate_limit",
	"/graphql",
	"/repos/{owner}/{repo}",
	"/repos/{owner}/{repo}/installation",
	"/repos/{owner}/{repo}/actions/jobs/{job_id}",
	"/repos/{owner}/{repo}/actions/jobs/{job_id}/rerun",
	"/repos/{owner}/{repo}/actions/runs",
	"/repos/{owner}/{repo}/actions/runs/{run_id}",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/approvals",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}/jobs",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/cancel",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/rerun",
	"/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs",
	"/repos/{owner}/{repo}/actions/workflows",
	"/repos/{owner}/{repo}/actions/workflows/{workflow_id}",
	"/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
	"/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs",
	"/repos/{owner}/{repo}/attestations/{subject_digest}",
	"/repos/{owner}/{repo}/branches/{branch...}",
	"/repos/{owner}/{repo}/check-runs",
	"/repos/{owner}/{repo}/check-runs/{check_run_id}",
	"/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations",
	"/repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs",
	"/repos/{owner}/{repo}/codeowners/errors",
	"/repos/{owner}/{repo}/collaborators/{username}/permission",
	"/repos/{owner}/{repo}/commits",
	"/repos/{owner}/{repo}/commits/{ref}",
	"/repos/{owner}/{repo}/commits/{ref}/check-runs",
	"/repos/{owner}/{repo}/commits/{ref}/status",
	"/repos/{owner}/{repo}/commits/{ref}/statuses",
	"/repos/{owner}/{repo}/compare/{basehead...}",
	"/repos/{owner}/{repo}/contents",
	"/repos/{owner}/{repo}/contents/{path...}",
	"/repos/{owner}/{repo}/deployments",
	"/repos/{owner}/{repo}/deployments/{deployment_id}",
	"/repos/{owner}/{repo}/deployments/{deployment_id}/statuses",
	"/repos/{owner}/{repo}/environments",
	"/repos/{owner}/{repo}/environments/{environment_name}",
	"/repos/{owner}/{repo}/git/blobs",
	"/repos/{owner}/{repo}/git/blobs/{file_sha}",
	"/repos/{owner}/{repo}/git/commits",
	"/repos/{owner}/{repo}/git/commits/{commit_sha}",
	"/repos/{owner}/{repo}/git/matching-refs/{ref...}",
	"/repos/{owner}/{repo}/git/ref/{ref...}",
	"/repos/{owner}/{repo}/git/refs",
	"/repos/{owner}/{repo}/git/refs/{ref...}",
	"/repos/{owner}/{repo}/git/trees",
	"/repos/{owner}/{repo}/git/trees/{tree_sha}",
	"/repos/{owner}/{repo}/issues/comments",
	"/repos/{owner}/{repo}/issues/comments/{comment_id}",
	"/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
	"/repos/{owner}/{repo}/issues/{issue_number}",
	"/repos/{owner}/{repo}/issues/{issue_number}/comments",
	"/repos/{owner}/{repo}/issues/{issue_number}/labels",
	"/repos/{owner}/{repo}/issues/{issue_number}/reactions",
	"/repos/{owner}/{repo}/pulls",
	"/repos/{owner}/{repo}/pulls/{pull_number}",
	"/repos/{owner}/{repo}/pulls/{pull_number}/commits",
	"/repos/{owner}/{repo}/pulls/{pull_number}/files",
	"/repos/{owner}/{repo}/pulls/{pull_number}/merge",
	"/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
	"/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
	"/repos/{owner}/{repo}/releases",
	"/repos/{owner}/{repo}/releases/latest",
	"/repos/{owner}/{repo}/releases/tags/{tag}",
	"/repos/{owner}/{repo}/releases/{release_id}",
	"/repos/{owner}/{repo}/statuses/{sha}",
)

type routeTemplate struct {
	text string   // as reported, "{path}" rather than "{path...}"
	segs []string // as matched
}

// routeWords is every static segment of the templates; Route keeps these
// words in a path no template matches and hides every other one, so the
// label set stays bounded whatever the path.
var routeWords = func() map[string]bool {
	words := map[string]bool{}
	for _, t := range routeTemplates {
		for _, s := range t.segs {
			if !strings.HasPrefix(s, "{") {
				words[s] = true
			}
		}
	}
	return words
}()

func compileRoutes(texts ...string) []routeTemplate {
	out := make([]routeTemplate, 0, len(texts))
	for _, t := range texts {
		out = append(out, routeTemplate{
			text: strings.ReplaceAll(t, "...}", "}"),
			segs: strings.Split(strings.TrimPrefix(t, "/"), "/"),
		})
	}
	return out
}

// Route turns a request path into its template, the label metrics are kept
// by: /repos/acme/api/actions/runs/42/rerun-failed-jobs becomes
// /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs. A GitHub
// Enterprise prefix (/api/v3) is dropped. A path no template knows keeps its
// first segment and the words ripcord's templates use; numbers become {id},
// any other segment {param}.
func Route(path string) string {
	path = strings.TrimPrefix(path, "/api/v3")
	path = strings.Trim(path, "/")
	if path == "" {
		return "/"
	}
	segs := strings.Split(path, "/")
	for _, t := range routeTemplates {
		if t.matches(segs) {
			return t.text
		}
	}
	return genericRoute(segs)
}

func (t routeTemplate) matches(segs []string) bool {
	for i, want := range t.segs {
		if strings.HasSuffix(want, "...}") {
			return len(segs) > i && segs[i] != ""
		}
		if i >= len(segs) {
			return false
		}
		switch {
		case strings.HasPrefix(want, "{"):
			if segs[i] == "" {
				return false
			}
		case want != segs[i]:
			return false
		}
	}
	return len(segs) == len(t.segs)
}

func genericRoute(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		b.WriteByte('/')
		switch {
		case i == 0:
			b.WriteString(s)
		case segs[0] == "repos" && i == 1:
			b.WriteString("{owner}")
		case segs[0] == "repos" && i == 2:
			b.WriteString("{repo}")
		case isDigits(s):
			b.WriteString("{id}")
		case routeWords[s]:
			b.WriteString(s)
		default:
			b.WriteString("{param}")
		}
	}
	return b.String()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
