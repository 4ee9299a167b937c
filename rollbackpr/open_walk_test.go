package rollbackpr_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/rollbackpr"
)

// A person pushed more commits on top of an open rollback pull request's
// rollback commit than Open reads looking for it (20): Open cannot tell
// whose rollback the branch holds, nor whether force-moving it throws
// their work away, so it leaves the branch alone and fails, naming the
// pull request, instead of replacing it. Once that pull request is closed,
// the branch is stale and replaced as before.
func TestOpenLeavesAnOpenBranchAloneBeyondTheWalk(t *testing.T) {
	gh, base := newRepo(t)
	first, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	var head string
	for i := range 21 {
		head = gh.Push(gitops, branch, fmt.Sprintf("hand edit %d", i), map[string]string{"apps/checkout/NOTES.md": fmt.Sprint(i)})
	}
	res, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err == nil || !strings.Contains(err.Error(), first.URL) || !rollbackpr.Permanent(err) {
		t.Errorf("Open = %+v, %v; want a permanent error naming %s", res, err, first.URL)
	}
	// The walk stops where the branch left the base, not at the base head:
	// the message says how far it read, and what it did not reach.
	for _, want := range []string{"none of its newest 20 commits is a rollback commit", "where the branch left the base"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("Open error %q does not say %q", err, want)
		}
	}
	if got, _ := gh.Branch(gitops, branch); got != head {
		t.Errorf("branch head = %s, want %s: the commits pushed by hand must stay", got, head)
	}
	if prs := gh.PullRequests(gitops); len(prs) != 1 || prs[0].State != "open" {
		t.Errorf("pull requests = %+v, want the one open", prs)
	}

	if err := gh.Close(gitops, first.PullRequest); err != nil {
		t.Fatal(err)
	}
	res, err = rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	if res.BranchOutcome != rollbackpr.Updated || res.PullRequestOutcome != rollbackpr.Created {
		t.Errorf("result = %+v, want the stale branch replaced and a new pull request", res)
	}
	assertRollbackBranch(t, gh, base)
}

// The base head a caller passes may be one GitHub no longer knows (read from a webhook,
// then force-pushed away): the walk cannot learn the branch point, and looks for the
// rollback commit under commits made by hand as far as its limit, rather than fail.
func TestRollbackUnderAnUnknownBaseHead(t *testing.T) {
	gh, _ := newRepo(t)
	first, err := rollbackpr.Open(context.Background(), gh, nil, request())
	if err != nil {
		t.Fatal(err)
	}
	head := gh.Push(gitops, branch, "hand edit", map[string]string{"apps/checkout/NOTES.md": "pinned"})
	unknown := strings.Repeat("0", 40)
	under, hand, err := rollbackpr.RollbackUnder(context.Background(), gh, "acme", "gitops", head, unknown)
	if err != nil || under.GetSHA() != first.Commit || hand != 1 {
		t.Errorf("RollbackUnder(%s, base %s) = %s, %d, %v; want the rollback commit %s under 1 commit made by hand",
			head, unknown, under.GetSHA(), hand, err, first.Commit)
	}
}
