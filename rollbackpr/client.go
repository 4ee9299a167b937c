package rollbackpr

import (
	"context"
	"errors"

	"github.com/google/go-github/v66/github"
)

// GitHub is the part of GitHub's REST API that opening a rollback pull request needs.
// NewGitHub implements it with go-github; rollbackprtest.Fake implements it in memory.
//
// The rollback commit is made with the Git Data API — a blob for the edited release
// file, a tree on the base head's tree, a commit whose one parent is the base head, and
// the branch ref created at that commit — rather than with the contents API. The Git
// Data calls need nothing from GitHub but the base head's commit and tree shas, which a
// BaseCache kept in step by push webhooks already knows; the branch is born pointing at
// the finished commit, so there is no moment where it exists without the rollback; and
// the commit's parent is named explicitly, so it is on exactly the base that was edited.
type GitHub interface {
	// GetRef reads a ref such as "heads/main"; ErrNotFound when it does not exist.
	GetRef(ctx context.Context, owner, repo, ref string) (*github.Reference, error)
	// GetContents reads a file at ref (a branch or a commit sha) and returns its bytes and
	// blob sha; ErrNotFound when there is no such file.
	GetContents(ctx context.Context, owner, repo, path, ref string) (content []byte, sha string, err error)
	// GetCommit reads a commit (by sha, or a branch's head by its name) with its tree,
	// parents and message.
	GetCommit(ctx context.Context, owner, repo, ref string) (*github.RepositoryCommit, error)
	// CompareCommits compares base...head: Commits are the commits head has and base does
	// not, as `git log base..head` lists them but oldest first (without paging, at most
	// the newest 250 of TotalCommits), and MergeBaseCommit their branch point.
	CompareCommits(ctx context.Context, owner, repo, base, head string) (*github.CommitsComparison, error)
	// CreateBlob stores content as a git blob and returns its sha.
	CreateBlob(ctx context.Context, owner, repo string, content []byte) (sha string, err error)
	// CreateTree writes a tree: baseTree (a tree sha, not a commit sha) with entries
	// replacing the paths they name.
	CreateTree(ctx context.Context, owner, repo, baseTree string, entries []*github.TreeEntry) (*github.Tree, error)
	// CreateCommit writes a commit object (message, tree, parents); it moves no ref.
	CreateCommit(ctx context.Context, owner, repo string, commit *github.Commit) (*github.Commit, error)
	// CreateRef creates a ref; ErrAlreadyExists when it exists.
	CreateRef(ctx context.Context, owner, repo string, ref *github.Reference) (*github.Reference, error)
	// UpdateRef moves a ref, force-pushing when force is set.
	UpdateRef(ctx context.Context, owner, repo string, ref *github.Reference, force bool) (*github.Reference, error)
	// FindPullRequest returns the open pull request from head (a branch of owner/repo)
	// into base, or, when there is none, into any other base (a person may retarget a
	// rollback pull request); nil when head heads no open pull request.
	FindPullRequest(ctx context.Context, owner, repo, head, base string) (*github.PullRequest, error)
	// CreatePullRequest opens a pull request; ErrAlreadyExists when one is open for head.
	CreatePullRequest(ctx context.Context, owner, repo string, pr *github.NewPullRequest) (*github.PullRequest, error)
	// EditPullRequest changes a pull request's title and body.
	EditPullRequest(ctx context.Context, owner, repo string, number int, pr *github.PullRequest) (*github.PullRequest, error)
	// AddLabels adds labels to an issue or pull request (the issues API serves both).
	AddLabels(ctx context.Context, owner, repo string, number int, labels []string) error
}

// Errors a GitHub implementation returns (wrapped) so Open can tell "already there" and
// "that base is gone" from a failure.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	ErrConflict      = errors.New("conflict")
	// ErrRejected is a 422 other than "already exists": GitHub understood the request
	// and refused it — a tree or parent sha that does not exist, "No commits between".
	ErrRejected = errors.New("rejected")
	// ErrForbidden is a 403 that is not GitHub's rate limit: the App's installation may
	// not do it (a permission it lacks, a repository it was not given). It is permanent.
	ErrForbidden = errors.New("forbidden")
)
