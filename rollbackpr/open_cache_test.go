package rollbackpr_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/rollbackpr"
	"github.com/ripcord/ripcord/rollbackpr/rollbackprtest"
)

// otherRequest is another rollback of the same release file (another target, so another
// branch), as the next rollback of the environment would be.
func otherRequest() rollbackpr.Request {
	r := request()
	r.Rollback.GitRevision = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
	r.Rollback.ReleaseID = "rb-9f8e:prod-eu/prod"
	return r
}

const otherBranch = "release-rollback-prod-9f8e7d6c"

// warmUp opens the first rollback, which reads the base cold and caches it.
func warmUp(t *testing.T, gh *rollbackprtest.Fake, cache rollbackpr.BaseCache) {
	t.Helper()
	if _, err := rollbackpr.Open(context.Background(), gh, cache, request()); err != nil {
		t.Fatal(err)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, coldCalls) {
		t.Fatalf("first rollback calls = %v, want the cold path %v", got, coldCalls)
	}
	gh.ResetCalls()
}

func parentsOf(t *testing.T, gh *rollbackprtest.Fake, branchName string) []string {
	t.Helper()
	head, ok := gh.Branch(gitops, branchName)
	if !ok {
		t.Fatalf("branch %s missing", branchName)
	}
	_, parents, _ := gh.Commit(gitops, head)
	return parents
}

func TestOpenWithAWarmCacheIsSixCalls(t *testing.T) {
	gh, base := newRepo(t)
	cache := newCache()
	warmUp(t, gh, cache)
	res, err := rollbackpr.Open(context.Background(), gh, cache, otherRequest())
	if err != nil {
		t.Fatal(err)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, warmCalls) {
		t.Errorf("warm calls = %v, want %v", got, warmCalls)
	}
	t.Logf("warm cache: %d GitHub calls: %v", len(gh.Calls()), gh.Calls())
	if res.BranchOutcome != rollbackpr.Created || res.PullRequest != 2 {
		t.Errorf("result = %+v, want a new branch and pull request #2", res)
	}
	if got := parentsOf(t, gh, otherBranch); !reflect.DeepEqual(got, []string{base}) {
		t.Errorf("parents = %v, want the base head %s", got, base)
	}
}

func TestOpenFollowsTheBaseThroughPushes(t *testing.T) {
	gh, base := newRepo(t)
	cache := newCache()
	warmUp(t, gh, cache)
	next := gh.Push(gitops, "main", "docs", map[string]string{"README.md": "hello\n"})
	tree, _ := gh.Tree(gitops, next)
	cache.Pushed(rollbackpr.Push{Repo: gitops, Branch: "main", Before: base, After: next, Tree: tree, Commits: 1, Changed: []string{"README.md"}})

	if _, err := rollbackpr.Open(context.Background(), gh, cache, otherRequest()); err != nil {
		t.Fatal(err)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, warmCalls) {
		t.Errorf("calls after an unrelated push = %v, want the warm %v", got, warmCalls)
	}
	if got := parentsOf(t, gh, otherBranch); !reflect.DeepEqual(got, []string{next}) {
		t.Errorf("parents = %v, want the pushed head %s", got, next)
	}
	if got := mustFile(t, gh, otherBranch, "README.md"); got != "hello\n" {
		t.Errorf("the branch lacks the pushed file: %q", got)
	}
}

func TestOpenReadsColdAfterAPushChangedTheReleaseFile(t *testing.T) {
	gh, base := newRepo(t)
	cache := newCache()
	warmUp(t, gh, cache)
	changed := strings.Replace(releaseYAML, "c0ffee-42", "c0ffee-43", 1)
	next := gh.Push(gitops, "main", "release 43", map[string]string{releaseFile: changed})
	tree, _ := gh.Tree(gitops, next)
	cache.Pushed(rollbackpr.Push{Repo: gitops, Branch: "main", Before: base, After: next, Tree: tree, Commits: 1, Changed: []string{releaseFile}})

	if _, err := rollbackpr.Open(context.Background(), gh, cache, otherRequest()); err != nil {
		t.Fatal(err)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, coldCalls) {
		t.Errorf("calls = %v, want the cold path %v", got, coldCalls)
	}
	if got := parentsOf(t, gh, otherBranch); !reflect.DeepEqual(got, []string{next}) {
		t.Errorf("parents = %v, want the pushed head %s", got, next)
	}
}

func TestOpenRetriesColdWhenGitHubRejectsTheCachedBase(t *testing.T) {
	gh, base := newRepo(t)
	cache := newCache()
	content, _ := gh.File(gitops, base, releaseFile)
	// A head that was force-pushed away and collected: GitHub knows neither sha.
	cache.Put(gitops, "main", releaseFile, rollbackpr.Snapshot{
		Commit: "1111111111111111111111111111111111111111", Tree: "2222222222222222222222222222222222222222", Content: content})

	res, err := rollbackpr.Open(context.Background(), gh, cache, request())
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"CreateBlob", "CreateTree"}, coldCalls...)
	if got := gh.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %v, want the rejected tree, then the cold path: %v", got, want)
	}
	assertOneRollback(t, gh, base, res)
	if s, ok := cache.Get(gitops, "main", releaseFile); !ok || s.Commit != base {
		t.Errorf("cache = %+v, %v; want the base read afresh, %s", s, ok, base)
	}
}

func TestOpenWithAStaleCacheAfterAMergeSaysThereIsNothingToChange(t *testing.T) {
	gh, _ := newRepo(t)
	cache := newCache()
	warmUp(t, gh, cache)
	prs := gh.PullRequests(gitops)
	if err := gh.Merge(gitops, prs[0].Number); err != nil {
		t.Fatal(err)
	}
	// The merge's push webhook never arrived.
	_, err := rollbackpr.Open(context.Background(), gh, cache, request())
	if !errors.Is(err, rollbackpr.ErrNoChange) {
		t.Fatalf("err = %v, want ErrNoChange once the base is read afresh", err)
	}
	calls := gh.Calls()
	if got := calls[len(calls)-2:]; !reflect.DeepEqual(got, coldReads) {
		t.Errorf("calls = %v, want them to end with a fresh read", calls)
	}
}

func TestOpenForgetsTheCachedBaseWhenAStepFails(t *testing.T) {
	gh, _ := newRepo(t)
	cache := newCache()
	warmUp(t, gh, cache)
	boom := errors.New("GitHub is down")
	gh.Fail("CreateBlob", boom)
	if _, err := rollbackpr.Open(context.Background(), gh, cache, otherRequest()); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, []string{"CreateBlob"}) {
		t.Errorf("calls = %v: a failure that says nothing about the base is not retried at once", got)
	}
	gh.ResetCalls()
	if _, err := rollbackpr.Open(context.Background(), gh, cache, otherRequest()); err != nil {
		t.Fatal(err)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, coldCalls) {
		t.Errorf("calls after the failure = %v, want the cold path %v", got, coldCalls)
	}
}

// A cache that missed a push bases the branch on the head it knows. That is the worst a
// stale cache can do: the pull request is from an older commit of main, and GitHub shows
// a conflict if the release file changed since.
func TestOpenWithAStaleCacheBasesTheBranchOnTheOlderHead(t *testing.T) {
	gh, base := newRepo(t)
	cache := newCache()
	warmUp(t, gh, cache)
	gh.Push(gitops, "main", "docs", map[string]string{"README.md": "hello\n"})
	if _, err := rollbackpr.Open(context.Background(), gh, cache, otherRequest()); err != nil {
		t.Fatal(err)
	}
	if got := parentsOf(t, gh, otherBranch); !reflect.DeepEqual(got, []string{base}) {
		t.Errorf("parents = %v, want the cached head %s", got, base)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, warmCalls) {
		t.Errorf("calls = %v, want %v", got, warmCalls)
	}
}
