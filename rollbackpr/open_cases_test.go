package rollbackpr_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/ripcord/ripcord/rollbackpr"
	"github.com/ripcord/ripcord/rollbackpr/rollbackprtest"
)

func TestOpenCreatesNothingWhenTheEditCannotBeMade(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*rollbackpr.Request)
		wantErr string
		is      error
	}{
		{"release file missing", func(r *rollbackpr.Request) { r.File = "apps/checkout/prod/missing.yaml" },
			`release file "apps/checkout/prod/missing.yaml" does not exist on main`, nil},
		{"path missing from the release file", func(r *rollbackpr.Request) { r.Fields.Digest = "image.sha" },
			`path "image.sha": image has no key "sha"`, rollbackpr.ErrPathNotFound},
		{"base branch missing", func(r *rollbackpr.Request) { r.Base = "trunk" },
			`base branch "trunk" does not exist`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh, _ := newRepo(t)
			req := request()
			tt.mutate(&req)
			_, err := rollbackpr.Open(context.Background(), gh, nil, req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.is)
			}
			if !rollbackpr.Permanent(err) {
				t.Errorf("Permanent(%v) = false: no retry can make this edit", err)
			}
			assertNothingWritten(t, gh)
		})
	}
}

func TestOpenRefusesABadRequestBeforeCallingGitHub(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*rollbackpr.Request)
		wantErr string
	}{
		{"repository without owner", func(r *rollbackpr.Request) { r.Repository = "gitops" }, `repository "gitops" is not owner/name`},
		{"empty base", func(r *rollbackpr.Request) { r.Base = "" }, "base is empty"},
		{"empty file", func(r *rollbackpr.Request) { r.File = "" }, "file is empty"},
		{"no fields", func(r *rollbackpr.Request) { r.Fields = rollbackpr.Fields{} }, "fields names no path"},
		{"field without a value", func(r *rollbackpr.Request) { r.Rollback.Digest = "" }, `fields.digest names "image.digest" but the rollback's digest is empty`},
		{"no rollback_of", func(r *rollbackpr.Request) { r.Rollback.RollbackOf = "" }, "rollback rollback_of is empty"},
		{"revision is a tag", func(r *rollbackpr.Request) { r.Rollback.GitRevision = "v1.2.3" }, `git_revision "v1.2.3" is not a commit sha`},
		{"rollback reuses the old release id", func(r *rollbackpr.Request) { r.Rollback.ReleaseID = r.Rollback.RollbackOf }, "equals rollback_of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh, _ := newRepo(t)
			req := request()
			tt.mutate(&req)
			_, err := rollbackpr.Open(context.Background(), gh, nil, req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if calls := gh.Calls(); len(calls) != 0 {
				t.Errorf("a bad request called GitHub: %v", calls)
			}
			if !rollbackpr.Permanent(err) {
				t.Errorf("Permanent(%v) = false for a request that cannot be right", err)
			}
		})
	}
}

// GitHub failing is worth another try: the job must not give up on it.
func TestOpenFailureOfGitHubIsNotPermanent(t *testing.T) {
	gh, _ := newRepo(t)
	gh.Fail("CreatePullRequest", errors.New("502 Bad Gateway"))
	_, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err == nil || rollbackpr.Permanent(err) {
		t.Fatalf("err = %v, Permanent = %v; want a failure worth retrying", err, rollbackpr.Permanent(err))
	}
}

func TestOpenRebuildsTheBranchWhenTheBaseMoved(t *testing.T) {
	gh, _ := newRepo(t)
	if _, err := rollbackpr.Open(context.Background(), gh, nil, request()); err != nil {
		t.Fatal(err)
	}
	newBase := gh.Push(gitops, "main", "unrelated change", map[string]string{"README.md": "hello\n"})
	res, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	if res.BranchOutcome != rollbackpr.Updated || res.CommitOutcome != rollbackpr.Created || res.PullRequestOutcome != rollbackpr.Reused {
		t.Errorf("result = %+v, want branch updated, new commit, same pull request", res)
	}
	assertOneRollback(t, gh, newBase, res)
	if got := mustFile(t, gh, branch, "README.md"); got != "hello\n" {
		t.Errorf("the rebuilt branch lacks the base's new file: %q", got)
	}
}

func TestOpenWithANewReasonUpdatesCommitAndBody(t *testing.T) {
	gh, base := newRepo(t)
	if _, err := rollbackpr.Open(context.Background(), gh, nil, request()); err != nil {
		t.Fatal(err)
	}
	req := request()
	req.Rollback.Reason = "error budget burn"
	res, err := rollbackpr.Open(context.Background(), gh, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.BranchOutcome != rollbackpr.Updated || res.PullRequestOutcome != rollbackpr.Updated {
		t.Errorf("result = %+v, want branch and pull request updated", res)
	}
	head, _ := gh.Branch(gitops, branch)
	msg, parents, _ := gh.Commit(gitops, head)
	if got := rollbackpr.ParseTrailers(msg)["Ripcord-Rollback-Reason"]; got != "error budget burn" {
		t.Errorf("reason trailer = %q", got)
	}
	if !reflect.DeepEqual(parents, []string{base}) {
		t.Errorf("parents = %v, want [%s]: the old commit must be replaced, not stacked on", parents, base)
	}
	prs := gh.PullRequests(gitops)
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "> error budget burn") {
		t.Errorf("pull requests = %+v, want one with the new reason", prs)
	}
}

// A person pushed commits on top of the rollback commit of an open pull request: a
// retry of the same rollback, or a second request for it (another reason, a moved base),
// must not force-push their work away. The branch stays at their newest commit, the pull
// request is reused, and the result names ripcord's commit and how many were made by
// hand.
func TestOpenKeepsCommitsSomeonePushedOnAnOpenRollback(t *testing.T) {
	tests := []struct {
		name   string
		before func(gh *rollbackprtest.Fake, req *rollbackpr.Request)
	}{
		{"retry", func(*rollbackprtest.Fake, *rollbackpr.Request) {}},
		{"second request with another reason", func(_ *rollbackprtest.Fake, req *rollbackpr.Request) {
			req.Rollback.Reason = "error budget burn"
		}},
		{"base moved since", func(gh *rollbackprtest.Fake, _ *rollbackpr.Request) {
			gh.Push(gitops, "main", "unrelated change", map[string]string{"README.md": "hello\n"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh, _ := newRepo(t)
			first, err := rollbackpr.Open(context.Background(), gh, nil, request())
			if err != nil {
				t.Fatal(err)
			}
			gh.Push(gitops, branch, "pin the replica count", map[string]string{"apps/checkout/staging.yaml": "replicas: 2\n"})
			head := gh.Push(gitops, branch, "hand edit", map[string]string{releaseFile: "image: hand-picked\n"})
			req := request()
			tt.before(gh, &req)
			res, err := rollbackpr.Open(context.Background(), gh, nil, req)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := gh.Branch(gitops, branch); got != head {
				t.Errorf("branch head = %s, want %s: the commits pushed by hand must stay", got, head)
			}
			want := rollbackpr.Result{Branch: branch, Commit: first.Commit, PullRequest: first.PullRequest, URL: first.URL,
				BranchOutcome: rollbackpr.Reused, CommitOutcome: rollbackpr.Reused, HandCommits: 2, Head: head}
			if res.PullRequestOutcome = ""; res != want {
				t.Errorf("result = %+v, want %+v", res, want)
			}
			if prs := gh.PullRequests(gitops); len(prs) != 1 || prs[0].State != "open" {
				t.Errorf("pull requests = %+v, want the one open", prs)
			}
		})
	}
}

// A branch whose pull request was closed is stale, whatever was pushed to it: the next
// rollback replaces it and opens a new pull request.
func TestOpenResetsABranchSomeoneCommittedToAfterItsPullRequestClosed(t *testing.T) {
	gh, base := newRepo(t)
	first, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	gh.Push(gitops, branch, "hand edit", map[string]string{releaseFile: "image: hand-picked\n"})
	if err := gh.Close(gitops, first.PullRequest); err != nil {
		t.Fatal(err)
	}
	res, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	if res.BranchOutcome != rollbackpr.Updated || res.HandCommits != 0 || res.PullRequestOutcome != rollbackpr.Created {
		t.Errorf("result = %+v, want the branch replaced and a new pull request", res)
	}
	if head, _ := gh.Branch(gitops, branch); head != res.Commit {
		t.Errorf("branch head = %s, want the new rollback commit %s", head, res.Commit)
	}
	if prs := gh.PullRequests(gitops); len(prs) != 2 || prs[1].State != "open" || prs[1].Number != res.PullRequest {
		t.Errorf("pull requests = %+v, want the closed one and a new open one", prs)
	}
	assertRollbackBranch(t, gh, base)
}

func TestOpenAfterTheBranchWasDeletedOpensANewPullRequest(t *testing.T) {
	gh, base := newRepo(t)
	if _, err := rollbackpr.Open(context.Background(), gh, nil, request()); err != nil {
		t.Fatal(err)
	}
	gh.DeleteBranch(gitops, branch) // GitHub closes the pull request with it
	gh.ResetCalls()
	res, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, coldCalls) {
		t.Errorf("calls = %v, want the fresh path %v", got, coldCalls)
	}
	prs := gh.PullRequests(gitops)
	if len(prs) != 2 || prs[0].State != "closed" || prs[1].State != "open" || res.PullRequest != prs[1].Number {
		t.Errorf("pull requests = %+v, result = %+v; want the closed one and one new open one", prs, res)
	}
	assertRollbackBranch(t, gh, base)
}

func TestOpenAfterMergeSaysThereIsNothingToChange(t *testing.T) {
	gh, _ := newRepo(t)
	res, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	if err := gh.Merge(gitops, res.PullRequest); err != nil {
		t.Fatal(err)
	}
	gh.ResetCalls()
	_, err = rollbackpr.Open(context.Background(), gh, nil, request())
	if !errors.Is(err, rollbackpr.ErrNoChange) {
		t.Fatalf("err = %v, want ErrNoChange", err)
	}
	if got := gh.Calls(); !reflect.DeepEqual(got, coldReads) {
		t.Errorf("calls = %v, want only the two reads %v", got, coldReads)
	}
}

// racingPR opens the same pull request itself just before Open's own create, as a second
// worker starting the same rollback would.
type racingPR struct {
	*rollbackprtest.Fake
}

func (r racingPR) CreatePullRequest(ctx context.Context, owner, repo string, pr *github.NewPullRequest) (*github.PullRequest, error) {
	if _, err := r.Fake.CreatePullRequest(ctx, owner, repo, pr); err != nil {
		return nil, err
	}
	return r.Fake.CreatePullRequest(ctx, owner, repo, pr)
}

func TestOpenTakesOverAPullRequestOpenedByARacingStart(t *testing.T) {
	gh, base := newRepo(t)
	res, err := rollbackpr.Open(context.Background(), racingPR{gh}, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	if res.PullRequestOutcome != rollbackpr.Updated {
		t.Errorf("pull request outcome = %s, want updated (found, then labelled)", res.PullRequestOutcome)
	}
	assertOneRollback(t, gh, base, res)
}

func assertNothingWritten(t *testing.T, gh *rollbackprtest.Fake) {
	t.Helper()
	for _, c := range gh.Calls() {
		if c != "GetCommit" && c != "GetContents" {
			t.Errorf("called %s before the edit was known to work: %v", c, gh.Calls())
		}
	}
	if got := gh.Branches(gitops); !reflect.DeepEqual(got, []string{"main"}) {
		t.Errorf("branches = %v, want only main", got)
	}
	if prs := gh.PullRequests(gitops); len(prs) != 0 {
		t.Errorf("pull requests = %+v, want none", prs)
	}
}

func TestOpenWithANewReleaseIDReplacesTheCommit(t *testing.T) {
	// Same branch, same trailers, but the file must now carry another release id: the
	// existing commit is not the one wanted, whatever its message says.
	gh, base := newRepo(t)
	if _, err := rollbackpr.Open(context.Background(), gh, nil, request()); err != nil {
		t.Fatal(err)
	}
	req := request()
	req.Rollback.ReleaseID = "rb-8b4c:prod-eu/prod"
	res, err := rollbackpr.Open(context.Background(), gh, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.BranchOutcome != rollbackpr.Updated || res.CommitOutcome != rollbackpr.Created {
		t.Errorf("result = %+v, want the branch rebuilt with a new commit", res)
	}
	want := strings.Replace(rolledBackYAML, "rb-7f3a:prod-eu/prod", "rb-8b4c:prod-eu/prod", 1)
	if got := mustFile(t, gh, branch, releaseFile); got != want {
		t.Errorf("release file:\n%s\nwant:\n%s", got, want)
	}
	_, parents, _ := gh.Commit(gitops, res.Commit)
	if !reflect.DeepEqual(parents, []string{base}) {
		t.Errorf("parents = %v, want [%s]", parents, base)
	}
	if prs := gh.PullRequests(gitops); len(prs) != 1 {
		t.Errorf("%d pull requests, want 1", len(prs))
	}
}

// A rollback of another release to the same target has the branch (the name holds the
// environment and the revision only) with its pull request open: a person reopened it
// after ripcord withdrew it, say, and was told it is stale. A new rollback must not turn
// that pull request into itself: it goes to a branch and a pull request of its own, which
// a retry finds again, also once the other pull request is closed.
func TestOpenLeavesAnotherRollbackOfTheSameTargetOpen(t *testing.T) {
	gh, base := newRepo(t)
	other, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	req := request()
	req.Rollback.ReleaseID, req.Rollback.RollbackOf = "rb-9c1d:prod-eu/prod", "r4:prod-eu/prod"
	res, err := rollbackpr.Open(context.Background(), gh, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	own := rollbackpr.OwnBranchName("prod", fullSHA, "r4:prod-eu/prod")
	if res.Branch != own || res.BranchOutcome != rollbackpr.Created || res.PullRequestOutcome != rollbackpr.Created ||
		res.PullRequest == other.PullRequest {
		t.Errorf("result = %+v, want a new pull request on %s", res, own)
	}
	if head, _ := gh.Branch(gitops, branch); head != other.Commit {
		t.Errorf("branch %s = %s, want the other rollback's %s left alone", branch, head, other.Commit)
	}
	if _, parents, _ := gh.Commit(gitops, res.Commit); !reflect.DeepEqual(parents, []string{base}) {
		t.Errorf("parents of %s = %v, want [%s]", res.Commit, parents, base)
	}
	if err := gh.Close(gitops, other.PullRequest); err != nil {
		t.Fatal(err)
	}
	again, err := rollbackpr.Open(context.Background(), gh, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Branch != own || again.PullRequest != res.PullRequest || again.BranchOutcome != rollbackpr.Reused {
		t.Errorf("retry = %+v, want %s and its pull request #%d again", again, own, res.PullRequest)
	}
	if prs := gh.PullRequests(gitops); len(prs) != 2 || prs[0].Title != prs[1].Title || prs[0].Head != branch || prs[1].Head != own {
		t.Errorf("pull requests = %+v, want the other rollback's and this one's", prs)
	}
}
