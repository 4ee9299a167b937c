package rollbackpr_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/rollbackpr"
	"github.com/ripcord/ripcord/rollbackpr/rollbackprtest"
)

const (
	gitops      = "acme/gitops"
	releaseFile = "apps/checkout/prod/release.yaml"
	branch      = "release-rollback-prod-1a2b3c4d"
)

const releaseYAML = `# checkout in prod; written by release tooling.
release:
  id: c0ffee-42:prod-eu/prod   # machine-owned

image:
  repository: ghcr.io/acme/checkout
  digest: "sha256:1111111111111111111111111111111111111111111111111111111111111111"
`

const rolledBackYAML = `# checkout in prod; written by release tooling.
release:
  id: rb-7f3a:prod-eu/prod   # machine-owned

image:
  repository: ghcr.io/acme/checkout
  digest: "sha256:2222222222222222222222222222222222222222222222222222222222222222"
`

var (
	// coldReads are the two reads of the base when the cache does not have it.
	coldReads = []string{"GetCommit", "GetContents"}
	// warmCalls are a fresh rollback's calls with the base in the cache.
	warmCalls = []string{"CreateBlob", "CreateTree", "CreateCommit", "CreateRef", "CreatePullRequest", "AddLabels"}
	coldCalls = append(append([]string(nil), coldReads...), warmCalls...)
	// reuseCalls write only git objects no ref points at: CreateRef answers "already
	// exists", and the branch's head is found to be the same rollback.
	reuseCalls = []string{"CreateBlob", "CreateTree", "CreateCommit", "CreateRef", "GetRef", "GetCommit", "FindPullRequest"}
)

func newCache() *rollbackpr.MemoryCache {
	return rollbackpr.NewMemoryCache(8, time.Hour, func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
}

func newRepo(t *testing.T) (*rollbackprtest.Fake, string) {
	t.Helper()
	gh := rollbackprtest.New()
	base := gh.Push(gitops, "main", "initial", map[string]string{
		releaseFile:                  releaseYAML,
		"apps/checkout/staging.yaml": "image: {digest: sha256:0}\n",
	})
	return gh, base
}

func request() rollbackpr.Request {
	return rollbackpr.Request{
		Repository: gitops,
		Base:       "main",
		File:       releaseFile,
		Fields:     rollbackpr.Fields{Image: "image.repository", Digest: "image.digest", ReleaseID: "release.id"},
		Rollback:   sampleRollback(),
	}
}

func TestOpenFreshRollbackWithoutCache(t *testing.T) {
	gh, base := newRepo(t)
	res, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, coldCalls) {
		t.Errorf("calls = %v, want %v (%d calls)", got, coldCalls, len(coldCalls))
	}
	head, ok := gh.Branch(gitops, branch)
	if !ok {
		t.Fatalf("branch %s was not created; branches: %v", branch, gh.Branches(gitops))
	}
	want := rollbackpr.Result{
		Branch: branch, Commit: head, PullRequest: 1, URL: "https://github.com/acme/gitops/pull/1",
		BranchOutcome: rollbackpr.Created, CommitOutcome: rollbackpr.Created, PullRequestOutcome: rollbackpr.Created,
	}
	if res != want {
		t.Errorf("result = %+v, want %+v", res, want)
	}
	assertRollbackBranch(t, gh, base)

	prs := gh.PullRequests(gitops)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	pr := prs[0]
	r := request().Rollback
	if pr.Title != "Rollback: checkout prod to 1a2b3c4d" || pr.Head != branch || pr.Base != "main" || pr.State != "open" {
		t.Errorf("pull request = %+v", pr)
	}
	if pr.Body != rollbackpr.Body(r) {
		t.Errorf("pull request body is not Body(rollback):\n%s", pr.Body)
	}
	if !reflect.DeepEqual(pr.Labels, []string{"ripcord:rollback"}) {
		t.Errorf("labels = %v, want [ripcord:rollback]", pr.Labels)
	}
	if _, ok := gh.File(gitops, "main", releaseFile); !ok || mustFile(t, gh, "main", releaseFile) != releaseYAML {
		t.Error("the base branch changed")
	}
}

// assertRollbackBranch checks the end state every run must reach: the branch is the base
// plus one commit that changes the release file alone, with trailers git reads back.
func assertRollbackBranch(t *testing.T, gh *rollbackprtest.Fake, base string) {
	t.Helper()
	head, ok := gh.Branch(gitops, branch)
	if !ok {
		t.Fatalf("branch %s missing", branch)
	}
	msg, parents, _ := gh.Commit(gitops, head)
	if !reflect.DeepEqual(parents, []string{base}) {
		t.Errorf("rollback commit parents = %v, want the base head %s", parents, base)
	}
	if got := mustFile(t, gh, branch, releaseFile); got != rolledBackYAML {
		t.Errorf("release file on the branch:\n%s\nwant:\n%s", got, rolledBackYAML)
	}
	if got := mustFile(t, gh, branch, "apps/checkout/staging.yaml"); got != "image: {digest: sha256:0}\n" {
		t.Errorf("another file changed: %q", got)
	}
	out, err := git(t, t.TempDir(), msg, "interpret-trailers", "--parse")
	if err != nil {
		t.Fatal(err)
	}
	assertTrailers(t, "git interpret-trailers --parse", gitTrailers(t, out), map[string]string{
		"Ripcord-Release-Kind":    "rollback",
		"Ripcord-Rollback-Of":     "c0ffee-42:prod-eu/prod",
		"Ripcord-Rollback-Reason": "canary aborted: 5xx > 2%",
	})
	if !strings.HasPrefix(msg, "Rollback: checkout prod to 1a2b3c4d\n") {
		t.Errorf("commit subject: %q", strings.SplitN(msg, "\n", 2)[0])
	}
}

func TestOpenTwiceMakesNothingNew(t *testing.T) {
	gh, base := newRepo(t)
	cache := newCache()
	first, err := rollbackpr.Open(context.Background(), gh, cache, request())
	if err != nil {
		t.Fatal(err)
	}
	gh.ResetCalls()

	second, err := rollbackpr.Open(context.Background(), gh, cache, request())
	if err != nil {
		t.Fatal(err)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, reuseCalls) {
		t.Errorf("calls = %v, want %v: a second start moves no ref", got, reuseCalls)
	}
	if head, _ := gh.Branch(gitops, branch); head != first.Commit {
		t.Errorf("a second start moved the branch from %s to %s", first.Commit, head)
	}
	if len(gh.PullRequests(gitops)) != 1 {
		t.Errorf("%d pull requests after two starts, want 1", len(gh.PullRequests(gitops)))
	}
	want := first
	want.BranchOutcome, want.CommitOutcome, want.PullRequestOutcome = rollbackpr.Reused, rollbackpr.Reused, rollbackpr.Reused
	if second != want {
		t.Errorf("second result = %+v, want %+v", second, want)
	}
	assertRollbackBranch(t, gh, base)
}

// Every step of the cold path may fail before or after its effect; with the same cache
// (warm after the first cold read) the next start finishes the rollback.
func TestOpenResumesAfterACrashAtEveryStep(t *testing.T) {
	crash := errors.New("crash")
	for _, method := range coldCalls {
		for _, after := range []bool{false, true} {
			name := method + " fails before its effect"
			if after {
				name = method + " takes effect, response lost"
			}
			t.Run(name, func(t *testing.T) {
				gh, base := newRepo(t)
				cache := newCache()
				if after {
					gh.FailAfter(method, crash)
				} else {
					gh.Fail(method, crash)
				}
				if _, err := rollbackpr.Open(context.Background(), gh, cache, request()); !errors.Is(err, crash) {
					t.Fatalf("first Open: err = %v, want the crash", err)
				}
				res, err := rollbackpr.Open(context.Background(), gh, cache, request())
				if err != nil {
					t.Fatalf("resumed Open: %v", err)
				}
				assertOneRollback(t, gh, base, res)

				// And a third start finds everything in place and moves nothing.
				gh.ResetCalls()
				third, err := rollbackpr.Open(context.Background(), gh, cache, request())
				if err != nil {
					t.Fatal(err)
				}
				if got := gh.Calls(); !reflect.DeepEqual(got, reuseCalls) {
					t.Errorf("third start calls = %v, want %v", got, reuseCalls)
				}
				if third.Commit != res.Commit || third.CommitOutcome != rollbackpr.Reused || third.PullRequestOutcome != rollbackpr.Reused {
					t.Errorf("a start after a complete one changed something: %+v after %+v", third, res)
				}
			})
		}
	}
}

func assertOneRollback(t *testing.T, gh *rollbackprtest.Fake, base string, res rollbackpr.Result) {
	t.Helper()
	if got := gh.Branches(gitops); !reflect.DeepEqual(got, []string{"main", branch}) {
		t.Errorf("branches = %v, want main and %s", got, branch)
	}
	prs := gh.PullRequests(gitops)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1: %+v", len(prs), prs)
	}
	if prs[0].State != "open" || !reflect.DeepEqual(prs[0].Labels, []string{"ripcord:rollback"}) {
		t.Errorf("pull request = %+v, want open and labelled", prs[0])
	}
	head, _ := gh.Branch(gitops, branch)
	if res.Commit != head || res.PullRequest != prs[0].Number || res.Branch != branch {
		t.Errorf("result %+v does not match the branch head %s and pull request #%d", res, head, prs[0].Number)
	}
	assertRollbackBranch(t, gh, base)
}

func mustFile(t *testing.T, gh *rollbackprtest.Fake, ref, path string) string {
	t.Helper()
	b, ok := gh.File(gitops, ref, path)
	if !ok {
		t.Fatalf("%s missing at %s", path, ref)
	}
	return string(b)
}
