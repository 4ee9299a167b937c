package rollbackpr

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/internal/ghlimit"
)

// NewGitHub implements GitHub with a go-github client (for a GitHub App, one built on the
// installation's token). HTTP statuses become the package's errors: 404 is ErrNotFound,
// 409 is ErrConflict, a 422 saying something "already exists" is ErrAlreadyExists, any
// other 422 is ErrRejected, and a 403 that is not GitHub's rate limit is ErrForbidden,
// permanent (see Permanent).
func NewGitHub(client *github.Client) GitHub {
	return goGitHub{c: client}
}

type goGitHub struct {
	c *github.Client
}

func (g goGitHub) GetRef(ctx context.Context, owner, repo, ref string) (*github.Reference, error) {
	r, resp, err := g.c.Git.GetRef(ctx, owner, repo, ref)
	return r, classify(resp, err)
}

func (g goGitHub) GetContents(ctx context.Context, owner, repo, path, ref string) ([]byte, string, error) {
	file, dir, resp, err := g.c.Repositories.GetContents(ctx, owner, repo, path, &github.RepositoryContentGetOptions{Ref: ref})
	if err := classify(resp, err); err != nil {
		return nil, "", err
	}
	if file == nil {
		return nil, "", fmt.Errorf("%s is a directory of %d entries, not a file", path, len(dir))
	}
	if t := file.GetType(); t != "" && t != "file" {
		return nil, "", fmt.Errorf("%s is a %s, not a file", path, t)
	}
	content, err := file.GetContent()
	if err != nil {
		// GitHub leaves content out (encoding "none") for files over 1 MB.
		return nil, "", fmt.Errorf("decode %s: %w", path, err)
	}
	return []byte(content), file.GetSHA(), nil
}

func (g goGitHub) GetCommit(ctx context.Context, owner, repo, ref string) (*github.RepositoryCommit, error) {
	c, resp, err := g.c.Repositories.GetCommit(ctx, owner, repo, ref, nil)
	return c, classify(resp, err)
}

func (g goGitHub) CompareCommits(ctx context.Context, owner, repo, base, head string) (*github.CommitsComparison, error) {
	c, resp, err := g.c.Repositories.CompareCommits(ctx, owner, repo, base, head, nil)
	return c, classify(resp, err)
}

func (g goGitHub) CreateBlob(ctx context.Context, owner, repo string, content []byte) (string, error) {
	// base64 carries the bytes exactly; "utf-8" would be re-encoded by GitHub.
	b, resp, err := g.c.Git.CreateBlob(ctx, owner, repo, &github.Blob{
		Content:  github.String(base64.StdEncoding.EncodeToString(content)),
		Encoding: github.String("base64"),
	})
	if err := classify(resp, err); err != nil {
		return "", err
	}
	return b.GetSHA(), nil
}

func (g goGitHub) CreateTree(ctx context.Context, owner, repo, baseTree string, entries []*github.TreeEntry) (*github.Tree, error) {
	t, resp, err := g.c.Git.CreateTree(ctx, owner, repo, baseTree, entries)
	return t, classify(resp, err)
}

func (g goGitHub) CreateCommit(ctx context.Context, owner, repo string, commit *github.Commit) (*github.Commit, error) {
	c, resp, err := g.c.Git.CreateCommit(ctx, owner, repo, commit, nil)
	return c, classify(resp, err)
}

func (g goGitHub) CreateRef(ctx context.Context, owner, repo string, ref *github.Reference) (*github.Reference, error) {
	r, resp, err := g.c.Git.CreateRef(ctx, owner, repo, ref)
	return r, classify(resp, err)
}

func (g goGitHub) UpdateRef(ctx context.Context, owner, repo string, ref *github.Reference, force bool) (*github.Reference, error) {
	r, resp, err := g.c.Git.UpdateRef(ctx, owner, repo, ref, force)
	return r, classify(resp, err)
}

func (g goGitHub) FindPullRequest(ctx context.Context, owner, repo, head, base string) (*github.PullRequest, error) {
	// GitHub filters by head only in the "owner:branch" form; a bare branch is ignored
	// and every open pull request would come back. No base filter: a pull request a
	// person retargeted is still this branch's, and a second one would be opened beside
	// it if it were not found.
	prs, resp, err := g.c.PullRequests.List(ctx, owner, repo, &github.PullRequestListOptions{
		State: "open", Head: owner + ":" + head,
	})
	if err := classify(resp, err); err != nil {
		return nil, err
	}
	return pickPullRequest(prs, head, base), nil
}

// pickPullRequest is the pull request of prs from head into base if there is one, else
// the first into any base.
func pickPullRequest(prs []*github.PullRequest, head, base string) *github.PullRequest {
	var found *github.PullRequest
	for _, pr := range prs {
		if pr.GetHead().GetRef() != head {
			continue
		}
		if pr.GetBase().GetRef() == base {
			return pr
		}
		if found == nil {
			found = pr
		}
	}
	return found
}

func (g goGitHub) CreatePullRequest(ctx context.Context, owner, repo string, pr *github.NewPullRequest) (*github.PullRequest, error) {
	p, resp, err := g.c.PullRequests.Create(ctx, owner, repo, pr)
	return p, classify(resp, err)
}

func (g goGitHub) EditPullRequest(ctx context.Context, owner, repo string, number int, pr *github.PullRequest) (*github.PullRequest, error) {
	p, resp, err := g.c.PullRequests.Edit(ctx, owner, repo, number, pr)
	return p, classify(resp, err)
}

func (g goGitHub) AddLabels(ctx context.Context, owner, repo string, number int, labels []string) error {
	_, resp, err := g.c.Issues.AddLabelsToIssue(ctx, owner, repo, number, labels)
	return classify(resp, err)
}

// classify wraps err with the package error its HTTP status means, keeping GitHub's
// message for the log.
func classify(resp *github.Response, err error) error {
	if err == nil {
		return nil
	}
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	switch {
	case status == http.StatusNotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case status == http.StatusConflict:
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case status == http.StatusUnprocessableEntity && alreadyExists(err):
		return fmt.Errorf("%w: %w", ErrAlreadyExists, err)
	case status == http.StatusUnprocessableEntity:
		return fmt.Errorf("%w: %w", ErrRejected, err)
	case status == http.StatusForbidden && !limited(err):
		// The installation lacks a permission (or the repository): retrying for
		// hours gives the same answer, so the person who asked is told at once.
		return permanent{fmt.Errorf("%w: %w; to open a rollback pull request the App needs the permissions %s "+
			"on the repository", ErrForbidden, err, NeededPermissions)}
	}
	return err
}

// NeededPermissions are the App's permissions a rollback pull request is opened with:
// the branch, its commit and the release file are contents, the pull request and its
// label are pull_requests.
const NeededPermissions = "contents: write and pull_requests: write"

// limited reports whether a 403 is GitHub's rate limit, which passes with time,
// read as every other job reads it.
func limited(err error) bool {
	_, _, limited := ghlimit.Lifts(err, time.Now())
	return limited
}

// alreadyExists recognises GitHub's two wordings: "Reference already exists" as the
// message, and "A pull request already exists for owner:branch." in the errors list.
func alreadyExists(err error) bool {
	var e *github.ErrorResponse
	if !errors.As(err, &e) {
		return false
	}
	if strings.Contains(e.Message, "already exists") {
		return true
	}
	for _, item := range e.Errors {
		if strings.Contains(item.Message, "already exists") || item.Code == "already_exists" {
			return true
		}
	}
	return false
}
