package rollbackpr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"
)

// ensureCommit makes the branch point at one rollback commit on top of base, and sets
// res.Branch to the branch it used. It writes the commit first and then places it
// (placeCommit) on the rollback's branch, or, when another rollback of the same target
// holds that branch, on a branch of this rollback's own (sameTargetBranch).
func (p plan) ensureCommit(ctx context.Context, gh GitHub, res *Result, base Snapshot, edited []byte) (fresh bool, err error) {
	commit, tree, err := p.writeCommit(ctx, gh, base, edited)
	if err != nil {
		return false, err
	}
	res.Branch = p.branch
	fresh, held, err := p.placeCommit(ctx, gh, res, base, commit, tree)
	if err != nil || !held {
		return fresh, err
	}
	own := p
	own.branch, own.ownBranch = p.ownBranch, ""
	res.Branch = own.branch
	fresh, held, err = own.placeCommit(ctx, gh, res, base, commit, tree)
	if err == nil && held {
		err = fmt.Errorf("branch %s holds another rollback of the same target as well", own.branch)
	}
	return fresh, err
}

// placeCommit makes p.branch point at commit (tree on base), and creates the branch
// there: when that succeeds, the branch is fresh (fresh = true) and no open pull request
// can be using it, since GitHub closes a pull request whose head branch is deleted. When
// the branch exists, a previous call got this far: its head is kept if it is already the
// commit this call would make (the commit just written is then left unreferenced, for
// GitHub to collect); it is kept too when a person pushed commits on top of a commit of
// this rollback and its pull request is open (keepHandCommits). held says that another
// rollback of the same target holds the branch (sameTargetBranch), which is left alone.
// Otherwise the branch is force-moved to commit.
func (p plan) placeCommit(ctx context.Context, gh GitHub, res *Result, base Snapshot, commit, tree string) (fresh, held bool, err error) {
	ref := "refs/heads/" + p.branch
	_, err = gh.CreateRef(ctx, p.owner, p.repo, &github.Reference{Ref: &ref, Object: &github.GitObject{SHA: &commit}})
	switch {
	case err == nil:
		res.BranchOutcome, res.CommitOutcome, res.Commit = Created, Created, commit
		return true, false, nil
	case !errors.Is(err, ErrAlreadyExists):
		return false, false, branchRefused{fmt.Errorf("create branch %s at %s: %w", p.branch, commit, err)}
	}

	head, err := gh.GetRef(ctx, p.owner, p.repo, "heads/"+p.branch)
	if err != nil {
		return false, false, fmt.Errorf("read existing branch %s: %w", p.branch, err)
	}
	headSHA := head.GetObject().GetSHA()
	if headSHA == commit {
		res.BranchOutcome, res.CommitOutcome, res.Commit = Reused, Reused, headSHA
		return false, false, nil
	}
	existing, err := gh.GetCommit(ctx, p.owner, p.repo, headSHA)
	if err != nil {
		return false, false, fmt.Errorf("read branch head %s: %w", headSHA, err)
	}
	if p.isRollbackCommit(existing, base.Commit, tree) {
		res.BranchOutcome, res.CommitOutcome, res.Commit = Reused, Reused, headSHA
		return false, false, nil
	}
	under, hand, ranOut, err := rollbackUnder(ctx, gh, p.owner, p.repo, existing, base.Commit)
	if err != nil {
		return false, false, err
	}
	if ranOut {
		if err := p.notAnOpenBranchBeyondTheWalk(ctx, gh, base.Commit); err != nil {
			return false, false, err
		}
	}
	if err := p.notAnotherAppsOpenRollback(ctx, gh, under, hand); err != nil {
		return false, false, err
	}
	if under != nil && p.ownBranch != "" && subjectOf(under) == p.title && !p.isThisRollback(under) {
		if held, err := p.sameTargetBranch(ctx, gh); err != nil || held {
			return false, held, err
		}
	}
	if under != nil && hand > 0 && p.isThisRollback(under) {
		if kept, err := p.keepHandCommits(ctx, gh, res, existing, under, hand); err != nil || kept {
			return false, false, err
		}
	}
	// Stale (older base, other reason or values, its pull request closed or merged) or
	// replaced by hand: replace it.
	if _, err := gh.UpdateRef(ctx, p.owner, p.repo, &github.Reference{Ref: &ref, Object: &github.GitObject{SHA: &commit}}, true); err != nil {
		return false, false, branchRefused{fmt.Errorf("move branch %s to %s: %w", p.branch, commit, err)}
	}
	res.BranchOutcome, res.CommitOutcome, res.Commit = Updated, Created, commit
	return false, false, nil
}

// sameTargetBranch answers for p.branch, whose rollback commit is another rollback's of
// the same target (its title, but another release rolled back: the branch name holds
// only the environment and the target's revision). While that rollback's pull request
// is open, force-moving the branch would turn it into this rollback under the people
// who reviewed it, and what ripcord said on it (a stale rollback reopened is told not
// to be merged) would then be about another rollback: it is left alone, and this
// rollback goes to its own branch (held). Once that pull request is closed or merged
// the branch is stale, unless an earlier call of this rollback went to its own branch
// already, which then stays the one.
func (p plan) sameTargetBranch(ctx context.Context, gh GitHub) (held bool, err error) {
	pr, err := gh.FindPullRequest(ctx, p.owner, p.repo, p.branch, p.request.Base)
	if err != nil {
		return false, fmt.Errorf("find pull request: %w", err)
	}
	if pr != nil {
		return true, nil
	}
	_, err = gh.GetRef(ctx, p.owner, p.repo, "heads/"+p.ownBranch)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read branch %s: %w", p.ownBranch, err)
	}
	return true, nil
}

// keepHandCommits leaves the branch where it is when a person pushed hand commits on top
// of under, a rollback commit of this rollback (its title, and its Ripcord-Release-Kind
// and Ripcord-Rollback-Of trailers, whatever its base or reason), and its pull request
// is open: force-moving the branch would throw their work away. It reports whether the
// branch was kept; res then names ripcord's commit (Commit), how many were made by hand
// and the head. A branch whose pull request is closed or merged is stale, and the caller
// replaces it.
func (p plan) keepHandCommits(ctx context.Context, gh GitHub, res *Result, head, under *github.RepositoryCommit, hand int) (bool, error) {
	pr, err := gh.FindPullRequest(ctx, p.owner, p.repo, p.branch, p.request.Base)
	if err != nil {
		return false, fmt.Errorf("find pull request: %w", err)
	}
	if pr == nil {
		return false, nil // stale: its pull request was closed or merged
	}
	res.BranchOutcome, res.CommitOutcome, res.Commit = Reused, Reused, under.GetSHA()
	res.HandCommits, res.Head = hand, head.GetSHA()
	return true, nil
}

// isThisRollback reports whether commit is a rollback commit of this rollback: the same
// title (app, environment, target) and the same release rolled back. Its base, reason and
// release id may differ: an earlier request of the same rollback wrote it.
func (p plan) isThisRollback(commit *github.RepositoryCommit) bool {
	trailers := ParseTrailers(commit.GetCommit().GetMessage())
	return subjectOf(commit) == p.title && trailers[TrailerKind] == KindRollback &&
		trailers[TrailerRollbackOf] == oneLine(p.request.Rollback.RollbackOf)
}

// subjectOf is the first line of commit's message.
func subjectOf(commit *github.RepositoryCommit) string {
	subject, _, _ := strings.Cut(commit.GetCommit().GetMessage(), "\n")
	return strings.TrimSpace(subject)
}

// notAnotherAppsOpenRollback refuses a branch whose rollback commit, under (at its head,
// or under hand commits a person pushed on top of it), is another app's with its pull
// request open. The branch name holds the environment and the revision but not the app,
// so two apps built from one commit (a monorepo) rolled back in the same environment of
// one GitOps repository meet on one branch, and so do two environments whose names fold
// to one branch name (refComponent: "prod eu" and "prod-eu"); replacing its head would
// turn the other rollback's open pull request into this one, and throw away the commits
// pushed on it. A branch whose pull request was merged or closed is stale and may be
// replaced.
func (p plan) notAnotherAppsOpenRollback(ctx context.Context, gh GitHub, under *github.RepositoryCommit, hand int) error {
	if under == nil || subjectOf(under) == p.title {
		return nil
	}
	pr, err := gh.FindPullRequest(ctx, p.owner, p.repo, p.branch, p.request.Base)
	if err != nil {
		return fmt.Errorf("find pull request: %w", err)
	}
	if pr == nil {
		return nil
	}
	onTop := ""
	if hand > 0 {
		onTop = fmt.Sprintf(" with %d commit(s) a person pushed on top", hand)
	}
	return permanent{fmt.Errorf("branch %s holds another rollback (of another app or environment), %s (%q%s), whose "+
		"pull request is open: the branch name names neither the app nor the environment exactly (two environments may "+
		"fold to one branch name), so this rollback cannot be opened on branch %s until that pull request is merged or closed",
		p.branch, pr.GetHTMLURL(), subjectOf(under), onTop, p.branch)}
}

// notAnOpenBranchBeyondTheWalk refuses a branch whose pull request is open when the walk
// for its rollback commit (rollbackUnder) read handCommitsLimit commits without reaching
// one, or the branch point (the commit where the branch left the base, which the walk
// stops at): a person may have pushed that many on top of a rollback, this one or
// another app's, and force-moving the branch would throw their work away under an open
// pull request. ripcord cannot tell, so it leaves the branch alone and says so; once
// that pull request is merged or closed the branch is stale and may be replaced.
func (p plan) notAnOpenBranchBeyondTheWalk(ctx context.Context, gh GitHub, baseSHA string) error {
	pr, err := gh.FindPullRequest(ctx, p.owner, p.repo, p.branch, p.request.Base)
	if err != nil {
		return fmt.Errorf("find pull request: %w", err)
	}
	if pr == nil {
		return nil
	}
	return permanent{fmt.Errorf("branch %s of %s, whose pull request is open: none of its newest %d commits is a "+
		"rollback commit, and ripcord reads no further down, neither to one nor to where the branch left the base "+
		"(head %s): it cannot tell whose rollback it holds, nor whether a person's commits would be lost, so it leaves the "+
		"branch alone; merge or close that pull request, and ask again",
		p.branch, pr.GetHTMLURL(), handCommitsLimit, ShortSHA(baseSHA))}
}

// writeCommit writes the edited release file as a blob, a tree that is base's tree with
// that file replaced, and a commit of that tree whose one parent is base's commit. It
// returns the commit's and the tree's sha. These objects change no ref: a crash here
// leaves nothing anyone sees.
func (p plan) writeCommit(ctx context.Context, gh GitHub, base Snapshot, edited []byte) (commit, tree string, err error) {
	blob, err := gh.CreateBlob(ctx, p.owner, p.repo, edited)
	if err != nil {
		return "", "", fmt.Errorf("write release file blob: %w", err)
	}
	// base_tree must be a tree sha: GitHub refuses a commit sha there.
	t, err := gh.CreateTree(ctx, p.owner, p.repo, base.Tree, []*github.TreeEntry{{
		Path: &p.request.File, Mode: github.String("100644"), Type: github.String("blob"), SHA: &blob,
	}})
	if err != nil {
		return "", "", fmt.Errorf("write tree on base tree %s: %w", base.Tree, err)
	}
	c, err := gh.CreateCommit(ctx, p.owner, p.repo, &github.Commit{
		Message: &p.message, Tree: &github.Tree{SHA: t.SHA}, Parents: []*github.Commit{{SHA: &base.Commit}},
	})
	if err != nil {
		return "", "", fmt.Errorf("write commit on %s: %w", base.Commit, err)
	}
	if c.GetSHA() == "" || t.GetSHA() == "" {
		return "", "", fmt.Errorf("GitHub gave commit %q with tree %q", c.GetSHA(), t.GetSHA())
	}
	return c.GetSHA(), t.GetSHA(), nil
}

// isRollbackCommit reports whether commit is exactly the one this call would make: one
// parent, the base head; the tree this call wrote (git names a tree by its content, so
// equal shas are equal files); and the same rollback trailers.
func (p plan) isRollbackCommit(commit *github.RepositoryCommit, baseSHA, tree string) bool {
	if len(commit.Parents) != 1 || commit.Parents[0].GetSHA() != baseSHA {
		return false
	}
	return commit.GetCommit().GetTree().GetSHA() == tree && sameTrailers(commit.GetCommit().GetMessage(), p.request.Rollback)
}

// ensurePullRequest opens the pull request, or brings the open one up to date. On a
// fresh branch it skips the search: no open pull request can have that head yet.
func (p plan) ensurePullRequest(ctx context.Context, gh GitHub, res *Result, fresh bool) error {
	if !fresh {
		pr, err := gh.FindPullRequest(ctx, p.owner, p.repo, p.branch, p.request.Base)
		if err != nil {
			return fmt.Errorf("find pull request: %w", err)
		}
		if pr != nil {
			return p.updatePullRequest(ctx, gh, res, pr)
		}
	}
	pr, err := gh.CreatePullRequest(ctx, p.owner, p.repo, &github.NewPullRequest{
		Title: &p.title,
		Head:  &p.branch,
		Base:  &p.request.Base,
		Body:  &p.body,
	})
	if errors.Is(err, ErrAlreadyExists) {
		// Someone opened it between our search and now (or GitHub kept one we did not
		// expect): take it over instead of failing.
		pr, err = gh.FindPullRequest(ctx, p.owner, p.repo, p.branch, p.request.Base)
		if err == nil && pr == nil {
			err = fmt.Errorf("GitHub says a pull request for %s exists but lists none", p.branch)
		}
		if err != nil {
			return fmt.Errorf("find pull request: %w", err)
		}
		return p.updatePullRequest(ctx, gh, res, pr)
	}
	if err != nil {
		return fmt.Errorf("create pull request: %w", err)
	}
	res.PullRequest, res.URL, res.PullRequestOutcome = pr.GetNumber(), pr.GetHTMLURL(), Created
	if err := gh.AddLabels(ctx, p.owner, p.repo, pr.GetNumber(), []string{Label}); err != nil {
		return fmt.Errorf("label pull request #%d: %w", pr.GetNumber(), err)
	}
	return nil
}

func (p plan) updatePullRequest(ctx context.Context, gh GitHub, res *Result, pr *github.PullRequest) error {
	res.PullRequest, res.URL, res.PullRequestOutcome = pr.GetNumber(), pr.GetHTMLURL(), Reused
	if pr.GetTitle() != p.title || pr.GetBody() != p.body {
		if _, err := gh.EditPullRequest(ctx, p.owner, p.repo, pr.GetNumber(), &github.PullRequest{Title: &p.title, Body: &p.body}); err != nil {
			return fmt.Errorf("update pull request #%d: %w", pr.GetNumber(), err)
		}
		res.PullRequestOutcome = Updated
	}
	for _, l := range pr.Labels {
		if l.GetName() == Label {
			return nil
		}
	}
	if err := gh.AddLabels(ctx, p.owner, p.repo, pr.GetNumber(), []string{Label}); err != nil {
		return fmt.Errorf("label pull request #%d: %w", pr.GetNumber(), err)
	}
	res.PullRequestOutcome = Updated
	return nil
}
