package rollbackpr_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/rollbackpr"
)

var (
	coldRoutes = []string{
		"GET /repos/{owner}/{repo}/commits/{ref} 200",
		"GET /repos/{owner}/{repo}/contents/{path} 200",
	}
	warmRoutes = []string{
		"POST /repos/{owner}/{repo}/git/blobs 201",
		"POST /repos/{owner}/{repo}/git/trees 201",
		"POST /repos/{owner}/{repo}/git/commits 201",
		"POST /repos/{owner}/{repo}/git/refs 201",
		"POST /repos/{owner}/{repo}/pulls 201",
		"POST /repos/{owner}/{repo}/issues/{issue_number}/labels 200",
	}
)

// TestOpenThroughGoGitHubAgainstGitHubsDescription runs Open with the go-github adapter
// against githubtest's fake api.github.com, which fails the test on any request GitHub's
// OpenAPI description does not allow and keeps real git objects: a cold rollback, the
// same rollback again, and another rollback on the warm cache.
func TestOpenThroughGoGitHubAgainstGitHubsDescription(t *testing.T) {
	s := githubtest.NewServer(t)
	// A fixed clock: GitHub names a commit by its content and dates, so the same
	// commit written twice in one second is one object.
	s.SetClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
	s.PutFile(gitops, "main", releaseFile, releaseYAML)
	base := s.PutFile(gitops, "main", "apps/checkout/staging.yaml", "image: {digest: sha256:0}\n")
	gh := rollbackpr.NewGitHub(s.Client())
	cache := newCache()
	seen := 0
	routes := func() []string {
		var out []string
		for _, r := range s.Requests()[seen:] {
			if r.Invalid != "" {
				t.Errorf("%s %s: %s", r.Method, r.Path, r.Invalid)
			}
			out = append(out, r.Method+" "+r.Route+" "+itoa(r.Status))
		}
		seen = len(s.Requests())
		return out
	}

	res, err := rollbackpr.Open(context.Background(), gh, cache, request())
	if err != nil {
		t.Fatal(err)
	}
	cold := routes()
	t.Logf("cold cache: a rollback pull request in %d GitHub calls", len(cold))
	if want := append(append([]string(nil), coldRoutes...), warmRoutes...); !reflect.DeepEqual(cold, want) {
		t.Errorf("requests = %v, want %v", cold, want)
	}
	if got, _ := s.FileAt(gitops, branch, releaseFile); got != rolledBackYAML {
		t.Errorf("release file on %s:\n%s\nwant:\n%s", branch, got, rolledBackYAML)
	}
	if got, _ := s.FileAt(gitops, branch, "apps/checkout/staging.yaml"); got != "image: {digest: sha256:0}\n" {
		t.Errorf("the tree lost or changed another file: %q", got)
	}
	head, _ := s.Ref(gitops, "heads/"+branch)
	c, _ := s.Commit(gitops, head)
	if res.Commit != head || !reflect.DeepEqual(c.Parents, []string{base}) {
		t.Errorf("result commit %s, branch head %s with parents %v; want one commit on %s", res.Commit, head, c.Parents, base)
	}
	if got := rollbackpr.ParseTrailers(c.Message)["Ripcord-Rollback-Of"]; got != "c0ffee-42:prod-eu/prod" {
		t.Errorf("Ripcord-Rollback-Of = %q in %q", got, c.Message)
	}

	// The same rollback again: GitHub answers the same commit, and the branch exists
	// at it already.
	again, err := rollbackpr.Open(context.Background(), gh, cache, request())
	if err != nil {
		t.Fatal(err)
	}
	wantAgain := []string{
		"POST /repos/{owner}/{repo}/git/blobs 201", "POST /repos/{owner}/{repo}/git/trees 201",
		"POST /repos/{owner}/{repo}/git/commits 201", "POST /repos/{owner}/{repo}/git/refs 422",
		"GET /repos/{owner}/{repo}/git/ref/{ref} 200", "GET /repos/{owner}/{repo}/pulls 200",
	}
	if got := routes(); !reflect.DeepEqual(got, wantAgain) {
		t.Errorf("second start requests = %v, want %v", got, wantAgain)
	}
	if again.Commit != head || again.BranchOutcome != rollbackpr.Reused || again.PullRequestOutcome != rollbackpr.Reused {
		t.Errorf("second start = %+v, want everything reused at %s", again, head)
	}

	// Another rollback (another target, so another branch) on the warm cache.
	other := request()
	other.Rollback.GitRevision = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
	other.Rollback.ReleaseID = "rb-9f8e:prod-eu/prod"
	if _, err := rollbackpr.Open(context.Background(), gh, cache, other); err != nil {
		t.Fatal(err)
	}
	warm := routes()
	t.Logf("warm cache: a rollback pull request in %d GitHub calls", len(warm))
	if !reflect.DeepEqual(warm, warmRoutes) {
		t.Errorf("warm requests = %v, want %v", warm, warmRoutes)
	}
	prs := s.PullRequests(gitops)
	if len(prs) != 2 || prs[0].Head != branch || prs[1].Head != "release-rollback-prod-9f8e7d6c" {
		t.Errorf("pull requests = %+v, want the two rollbacks", prs)
	}
	for _, pr := range prs {
		if !reflect.DeepEqual(pr.Labels, []string{"ripcord:rollback"}) {
			t.Errorf("pull request %s labels = %v", pr.Head, pr.Labels)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
