package rollbackpr

import (
	"context"
	"errors"

	"github.com/google/go-github/v66/github"
)

// GitHub is the part of GitHub's REST API that opening a rollback pull request needs.
// NewGitHub implements it with go-github; rollbackprtest.Fake implements it in memory.
//
// The file is committed with the contents API (UpdateFile) on a branch created at the
// base head, not with blob, tree and commit calls: that makes a fresh rollback pull
// request six calls instead of seven or eight (see Open).
type GitHub interface {
	// GetRef reads a ref such as "heads/main"; ErrNotFound when it does not exist.
	GetRef(ctx context.Context, owner, repo, ref string) (*github.Reference, error)
	// GetContents reads a file at ref (a branch or a commit sha) and returns its bytes and
	// blob sha; ErrNotFound when there is no such file.
	GetContents(ctx context.Context, owner, repo, path, ref string) (content []byte, sha string, err error)
	// GetCommit reads a commit with its parents, message and changed files.
	GetCommit(ctx context.Context, owner, repo, sha string) (*github.RepositoryCommit, error)
	// CreateRef creates a ref; ErrAlreadyExists when it exists.
	CreateRef(ctx context.Context, owner, repo string, ref *github.Reference) (*github.Reference, error)
	// UpdateRef moves a ref, force-pushing when force is set.
	UpdateRef(ctx context.Context, owner, repo string, ref *github.Reference, force bool) (*github.Reference, error)
	// UpdateFile commits new content for one file on opts.Branch; opts.SHA is the blob it
	// replaces, and ErrConflict says the branch has moved on.
	UpdateFile(ctx context.Context, owner, repo, path string, opts *github.RepositoryContentFileOptions) (*github.Commit, error)
	// FindPullRequest returns the open pull request from head (a branch of owner/repo)
	// into base, or nil when there is none.
	FindPullRequest(ctx context.Context, owner, repo, head, base string) (*github.PullRequest, error)
	// CreatePullRequest opens a pull request; ErrAlreadyExists when one is open for head.
	CreatePullRequest(ctx context.Context, owner, repo string, pr *github.NewPullRequest) (*github.PullRequest, error)
	// EditPullRequest changes a pull request's title and body.
	EditPullRequest(ctx context.Context, owner, repo string, number int, pr *github.PullRequest) (*github.PullRequest, error)
	// AddLabels adds labels to an issue or pull request (the issues API serves both).
	AddLabels(ctx context.Context, owner, repo string, number int, labels []string) error
}

// Errors a GitHub implementation returns (wrapped) so Open can tell "already there" from
// a failure.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	ErrConflict      = errors.New("conflict: the branch moved on")
)
