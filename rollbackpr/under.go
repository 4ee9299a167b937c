package rollbackpr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"
)

// handCommitsLimit bounds how many commits under a branch head rollbackUnder reads
// (one GetCommit each, after one CompareCommits) looking for a rollback commit.
const handCommitsLimit = 20

// RollbackUnder is the newest rollback commit (by its title) at or under head, a commit
// sha of owner/repo, and how many commits are on top of it (hand: a person pushed them
// on top of ripcord's rollback commit). It is the walk Open makes on a rollback branch,
// for whoever must recognise a rollback pull request by what ripcord wrote into it while
// people may have pushed to it since. under is nil when the walk reaches the branch's
// point on the base whose head is baseSHA (may be empty: then the walk knows no branch
// point), baseSHA itself, a root commit, or its limit without finding one.
func RollbackUnder(ctx context.Context, gh GitHub, owner, repo, head, baseSHA string) (under *github.RepositoryCommit, hand int, err error) {
	c, err := gh.GetCommit(ctx, owner, repo, head)
	if err != nil {
		return nil, 0, fmt.Errorf("read commit %s: %w", head, err)
	}
	under, hand, _, err = rollbackUnder(ctx, gh, owner, repo, c, baseSHA)
	return under, hand, err
}

// rollbackUnder is RollbackUnder from head, a commit read already. It walks first
// parents, which a merge of the base into the branch (GitHub's "Update branch") keeps on
// the branch, and stops at the branch point (the first commit the base has too: GitHub's
// comparison of baseSHA with head lists the commits the branch has alone), at baseSHA or
// a root commit, or after handCommitsLimit commits: under is then nil, and ranOut says the
// walk stopped at its limit, before it could tell whether a rollback commit is further
// down. Past the branch point the walk would be in the base's own history, where an
// older rollback merged long ago is no commit of this branch.
func rollbackUnder(ctx context.Context, gh GitHub, owner, repo string, head *github.RepositoryCommit, baseSHA string) (under *github.RepositoryCommit, hand int, ranOut bool, err error) {
	var branch onBranch
	asked := false
	for c := head; ; hand++ {
		if strings.HasPrefix(subjectOf(c), TitlePrefix) {
			return c, hand, false, nil
		}
		if c.GetSHA() == baseSHA || len(c.Parents) == 0 {
			return nil, 0, false, nil
		}
		if hand == handCommitsLimit {
			return nil, 0, true, nil
		}
		if !asked && baseSHA != "" {
			if branch, err = branchCommits(ctx, gh, owner, repo, baseSHA, head.GetSHA()); err != nil {
				return nil, 0, false, err
			}
			asked = true
		}
		parent := c.Parents[0].GetSHA()
		if branch.complete && !branch.commits[parent] {
			return nil, 0, false, nil // the branch point: the base has it
		}
		if c, err = gh.GetCommit(ctx, owner, repo, parent); err != nil {
			return nil, 0, false, fmt.Errorf("read commit %s under branch head %s: %w", parent, head.GetSHA(), err)
		}
	}
}

// onBranch is the set of commits a branch has that its base does not; complete says
// the set holds them all, so that a commit not in it is the base's.
type onBranch struct {
	commits  map[string]bool
	complete bool
}

// branchCommits asks GitHub which commits head has that baseSHA does not. GitHub lists
// at most the newest 250 of them; when it lists fewer than it counts, the set is not
// complete, and the walk goes on as far as its limit. So it does when GitHub does not
// know baseSHA (a base head read from a webhook may have been force-pushed away since).
func branchCommits(ctx context.Context, gh GitHub, owner, repo, baseSHA, head string) (onBranch, error) {
	cmp, err := gh.CompareCommits(ctx, owner, repo, baseSHA, head)
	if errors.Is(err, ErrNotFound) {
		return onBranch{}, nil
	}
	if err != nil {
		return onBranch{}, fmt.Errorf("compare branch head %s with base %s: %w", head, baseSHA, err)
	}
	out := onBranch{commits: map[string]bool{}, complete: len(cmp.Commits) >= cmp.GetTotalCommits()}
	for _, c := range cmp.Commits {
		out.commits[c.GetSHA()] = true
	}
	return out, nil
}
