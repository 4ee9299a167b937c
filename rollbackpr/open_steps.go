package rollbackpr

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/go-github/v66/github"
)

// ensureCommit makes the branch point at one rollback commit on top of the base head. It
// creates the branch first: when that succeeds, the branch is fresh (fresh = true) and no
// open pull request can be using it, since GitHub closes a pull request whose head branch
// is deleted. When the branch exists, a previous call got this far: its head is kept if
// it is already the commit this call would make, and otherwise reset to the base head.
func (p plan) ensureCommit(ctx context.Context, gh GitHub, res *Result, baseSHA, blobSHA string, edited []byte) (fresh bool, err error) {
	ref := "refs/heads/" + p.branch
	_, err = gh.CreateRef(ctx, p.owner, p.repo, &github.Reference{Ref: &ref, Object: &github.GitObject{SHA: &baseSHA}})
	switch {
	case err == nil:
		res.BranchOutcome = Created
		return true, p.commitFile(ctx, gh, res, blobSHA, edited)
	case !errors.Is(err, ErrAlreadyExists):
		return false, fmt.Errorf("create branch: %w", err)
	}

	head, err := gh.GetRef(ctx, p.owner, p.repo, "heads/"+p.branch)
	if err != nil {
		return false, fmt.Errorf("read existing branch: %w", err)
	}
	headSHA := head.GetObject().GetSHA()
	if headSHA == baseSHA {
		// A previous call created the branch and stopped before committing.
		res.BranchOutcome = Reused
		return false, p.commitFile(ctx, gh, res, blobSHA, edited)
	}
	commit, err := gh.GetCommit(ctx, p.owner, p.repo, headSHA)
	if err != nil {
		return false, fmt.Errorf("read branch head %s: %w", headSHA, err)
	}
	if p.isRollbackCommit(commit, baseSHA, edited) {
		res.BranchOutcome, res.CommitOutcome, res.Commit = Reused, Reused, headSHA
		return false, nil
	}
	// Stale (older base, other reason or values) or touched by hand: start it again.
	if _, err := gh.UpdateRef(ctx, p.owner, p.repo, &github.Reference{Ref: &ref, Object: &github.GitObject{SHA: &baseSHA}}, true); err != nil {
		return false, fmt.Errorf("reset branch to %s: %w", baseSHA, err)
	}
	res.BranchOutcome = Updated
	return false, p.commitFile(ctx, gh, res, blobSHA, edited)
}

// isRollbackCommit reports whether commit is exactly the one this call would make: one
// parent, the base head; the same rollback trailers; and a tree that differs from the
// base's in the release file alone, which holds the edited bytes.
func (p plan) isRollbackCommit(commit *github.RepositoryCommit, baseSHA string, edited []byte) bool {
	if len(commit.Parents) != 1 || commit.Parents[0].GetSHA() != baseSHA {
		return false
	}
	if !sameTrailers(commit.GetCommit().GetMessage(), p.request.Rollback) {
		return false
	}
	return len(commit.Files) == 1 &&
		commit.Files[0].GetFilename() == p.request.File &&
		commit.Files[0].GetSHA() == gitBlobSHA(edited)
}

func (p plan) commitFile(ctx context.Context, gh GitHub, res *Result, blobSHA string, edited []byte) error {
	commit, err := gh.UpdateFile(ctx, p.owner, p.repo, p.request.File, &github.RepositoryContentFileOptions{
		Message: &p.message,
		Content: edited,
		SHA:     &blobSHA,
		Branch:  &p.branch,
	})
	if err != nil {
		return fmt.Errorf("commit release file: %w", err)
	}
	res.Commit, res.CommitOutcome = commit.GetSHA(), Created
	return nil
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

// gitBlobSHA is git's object id for a blob with this content, which GitHub reports as a
// changed file's sha.
func gitBlobSHA(content []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}
