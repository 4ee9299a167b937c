package rollbackpr

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"
)

// handCommitsLimit bounds how many commits under a branch head rollbackUnder reads
// (one GetCommit each) looking for a rollback commit.
const handCommitsLimit = 20

// RollbackUnder is the newest rollback commit (by its title) at or under head, a commit
// sha of owner/repo, and how many commits are on top of it (hand: a person pushed them
// on top of ripcord's rollback commit). It is the walk Open makes on a rollback branch,
// for whoever must recognise a rollback pull request by what ripcord wrote into it while
// people may have pushed to it since. under is nil when the walk reaches baseSHA (may be
// empty), a root commit, or its limit without finding one.
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
// the branch, and stops at baseSHA or a root commit, or after handCommitsLimit commits:
// under is then nil, and ranOut says the walk stopped at its limit, before it could tell
// whether a rollback commit is further down.
func rollbackUnder(ctx context.Context, gh GitHub, owner, repo string, head *github.RepositoryCommit, baseSHA string) (under *github.RepositoryCommit, hand int, ranOut bool, err error) {
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
		parent := c.Parents[0].GetSHA()
		if c, err = gh.GetCommit(ctx, owner, repo, parent); err != nil {
			return nil, 0, false, fmt.Errorf("read commit %s under branch head %s: %w", parent, head.GetSHA(), err)
		}
	}
}
