package rollbackpr_test

import (
	"context"
	"net/url"
	"reflect"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/rollbackpr"
)

// TestOpenThroughGoGitHubAgainstGitHubsDescription runs Open with the go-github adapter
// against githubtest's fake api.github.com, which fails the test on any request GitHub's
// OpenAPI description does not allow.
func TestOpenThroughGoGitHubAgainstGitHubsDescription(t *testing.T) {
	s := githubtest.NewServer(t)
	base := s.PutFile(gitops, "main", releaseFile, releaseYAML)
	client := github.NewClient(nil)
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	client.BaseURL = u
	gh := rollbackpr.NewGitHub(client)

	res, err := rollbackpr.Open(context.Background(), gh, request())
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			t.Errorf("%s %s: %s", r.Method, r.Path, r.Invalid)
		}
		routes = append(routes, r.Method+" "+r.Route)
	}
	want := []string{
		"GET /repos/{owner}/{repo}/git/ref/{ref}",
		"GET /repos/{owner}/{repo}/contents/{path}",
		"POST /repos/{owner}/{repo}/git/refs",
		"PUT /repos/{owner}/{repo}/contents/{path}",
		"POST /repos/{owner}/{repo}/pulls",
		"POST /repos/{owner}/{repo}/issues/{issue_number}/labels",
	}
	if !reflect.DeepEqual(routes, want) {
		t.Errorf("requests = %v, want %v", routes, want)
	}
	if got, _ := s.FileAt(gitops, branch, releaseFile); got != rolledBackYAML {
		t.Errorf("release file on %s:\n%s\nwant:\n%s", branch, got, rolledBackYAML)
	}
	head, _ := s.Ref(gitops, "heads/"+branch)
	c, _ := s.Commit(gitops, head)
	if res.Commit != head || !reflect.DeepEqual(c.Parents, []string{base}) {
		t.Errorf("result commit %s, branch head %s with parents %v; want one commit on %s", res.Commit, head, c.Parents, base)
	}
	if got := rollbackpr.ParseTrailers(c.Message)["Ripcord-Rollback-Of"]; got != "c0ffee-42:prod-eu/prod" {
		t.Errorf("Ripcord-Rollback-Of = %q in %q", got, c.Message)
	}

	// A second start goes through the reuse path (422 on the branch, then the branch's
	// head commit and the pull request search) and still leaves one pull request.
	// githubtest lists no changed files for GET /commits/{ref}, where GitHub lists them,
	// so here the branch is rebuilt rather than kept; the open-path unit tests pin the
	// reuse itself.
	if _, err := rollbackpr.Open(context.Background(), gh, request()); err != nil {
		t.Fatal(err)
	}
	prs := s.PullRequests(gitops)
	if len(prs) != 1 || prs[0].Head != branch || prs[0].Base != "main" || !reflect.DeepEqual(prs[0].Labels, []string{"ripcord:rollback"}) {
		t.Errorf("pull requests = %+v, want one labelled rollback pull request", prs)
	}
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			t.Errorf("%s %s: %s", r.Method, r.Path, r.Invalid)
		}
	}
}
