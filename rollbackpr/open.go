package rollbackpr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// Request says where the release file is and what the rollback is. Repository, Base,
// File and Fields are the environment's rollback settings in .github/ripcord.yml.
type Request struct {
	// Repository is "owner/name" of the repository that holds the release file.
	Repository string `json:"repository"`
	// Base is the branch the pull request targets; the caller resolves the repository's
	// default branch when the config leaves it out.
	Base string `json:"base"`
	// File is the release file's path in Repository.
	File     string   `json:"file"`
	Fields   Fields   `json:"fields"`
	Rollback Rollback `json:"rollback"`
}

// Fields are the dotted paths in the release file that receive the rollback's image,
// digest and release id; an empty path is left alone. It has the shape of
// repoconfig.Fields, so one converts to the other.
type Fields struct {
	Image     string
	Digest    string
	ReleaseID string
}

// Outcome says what Open did to one thing.
type Outcome string

const (
	Created Outcome = "created" // it did not exist and Open made it
	Reused  Outcome = "reused"  // it existed as wanted; Open left it alone
	Updated Outcome = "updated" // it existed and Open changed it (moved, retitled, labelled)
)

// Result is where the rollback pull request is and what Open did to get there.
type Result struct {
	Branch             string  `json:"branch"`
	Commit             string  `json:"commit"`
	PullRequest        int     `json:"pull_request"`
	URL                string  `json:"url"`
	BranchOutcome      Outcome `json:"branch_outcome"`
	CommitOutcome      Outcome `json:"commit_outcome"`
	PullRequestOutcome Outcome `json:"pull_request_outcome"`
	// HandCommits is how many commits a person pushed on top of ripcord's rollback
	// commit (Commit) on the branch of an open pull request; Head, the newest of them, is
	// where Open left the branch rather than throw them away.
	HandCommits int    `json:"hand_commits,omitempty"`
	Head        string `json:"head,omitempty"`
}

// ErrNoChange says the release file at the base head already has the rollback's values:
// the rollback was merged already, or the request names the release that is running.
var ErrNoChange = errors.New("the release file already has these values")

// plan is everything Open derives from the request before it calls GitHub.
type plan struct {
	owner, repo         string
	branch, title, body string
	// ownBranch is where this rollback goes when another rollback of the same target
	// holds branch (OwnBranchName); empty once it is there.
	ownBranch string
	message   string
	changes   map[string]string
	request   Request
}

func newPlan(req Request) (plan, error) {
	owner, repo, ok := strings.Cut(req.Repository, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return plan{}, fmt.Errorf("repository %q is not owner/name", req.Repository)
	}
	if strings.TrimSpace(req.Base) == "" {
		return plan{}, fmt.Errorf("base is empty; pass the branch the pull request targets")
	}
	if strings.TrimSpace(req.File) == "" {
		return plan{}, fmt.Errorf("file is empty; pass the release file's path")
	}
	r := req.Rollback
	if err := r.Validate(); err != nil {
		return plan{}, err
	}
	changes, err := req.Fields.changes(r)
	if err != nil {
		return plan{}, err
	}
	return plan{
		owner: owner, repo: repo,
		branch:    BranchName(r.Environment, r.GitRevision),
		ownBranch: OwnBranchName(r.Environment, r.GitRevision, r.RollbackOf),
		title:     Title(r.App, r.Environment, r.GitRevision),
		body:      Body(r),
		message:   CommitMessage(r),
		changes:   changes,
		request:   req,
	}, nil
}

// changes maps each configured path to the value it receives.
func (f Fields) changes(r Rollback) (map[string]string, error) {
	out := map[string]string{}
	for _, c := range []struct{ field, path, value string }{
		{"image", f.Image, r.Image},
		{"digest", f.Digest, r.Digest},
		{"release_id", f.ReleaseID, r.ReleaseID},
	} {
		if c.path == "" {
			continue
		}
		if strings.TrimSpace(c.value) == "" {
			return nil, fmt.Errorf("fields.%s names %q but the rollback's %s is empty", c.field, c.path, c.field)
		}
		out[c.path] = c.value
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("fields names no path to change; set fields.image or fields.digest")
	}
	return out, nil
}

// Open opens the rollback pull request, or finds the one a previous call opened and brings
// it up to date. Calling it twice, or again after a crash between any two of its steps,
// leaves one branch, one rollback commit on it and one pull request.
//
// The base snapshot (base head, its tree, the release file there) comes from cache when
// it holds one (cache may be nil), and otherwise from two reads: GetCommit of the base
// branch and GetContents at that commit. The commit is made with the Git Data API, so a
// fresh rollback with a warm cache is six calls — CreateBlob, CreateTree, CreateCommit,
// CreateRef (the branch, born at the rollback commit), CreatePullRequest, AddLabels —
// and eight with a cold one. Pull requests cannot be created with labels, so the label
// is the one call that cannot be folded away. Nothing is written before the edit
// succeeded, so a missing file or path creates nothing.
//
// A snapshot from the cache that leads to a failure is forgotten; when the failure says
// the base may have moved (the edit no longer applies or changes nothing, or GitHub
// rejects a sha as unknown), Open retries once at once from a fresh read.
func Open(ctx context.Context, gh GitHub, cache BaseCache, req Request) (Result, error) {
	p, err := newPlan(req)
	if err != nil {
		return Result{}, fmt.Errorf("open rollback pull request: %w", permanent{err})
	}
	res, err := p.open(ctx, gh, cache)
	if err != nil {
		return res, fmt.Errorf("open rollback pull request %s in %s for release %s: %w",
			p.branch, req.Repository, req.Rollback.ReleaseID, err)
	}
	return res, nil
}

func (p plan) open(ctx context.Context, gh GitHub, cache BaseCache) (Result, error) {
	repo, base, file := p.request.Repository, p.request.Base, p.request.File
	if cache != nil {
		if snap, ok := cache.Get(repo, base, file); ok {
			res, err := p.openAt(ctx, gh, snap)
			if err == nil {
				return res, nil
			}
			cache.Forget(repo, base)
			if !baseMayHaveMoved(err) {
				return res, err
			}
		}
	}
	snap, err := p.readBase(ctx, gh)
	if err != nil {
		return Result{Branch: p.branch}, err
	}
	if cache != nil {
		cache.Put(repo, base, file, snap)
	}
	res, err := p.openAt(ctx, gh, snap)
	var refused branchRefused
	if errors.As(err, &refused) && errors.Is(err, ErrRejected) {
		// On a base read fresh the commit's shas are all known to GitHub: a 422 on the
		// branch is a rule covering it, which no retry gets past.
		return res, permanent{fmt.Errorf("%w: a branch protection rule or ruleset blocks ripcord's rollback branches "+
			"(%s*): let the App create and force-push branches matching it, or exempt the App from the rule", err, BranchPrefix)}
	}
	return res, err
}

// baseMayHaveMoved reports whether err could come from a snapshot that is no longer the
// base head, so that a fresh read may succeed where the snapshot failed.
func baseMayHaveMoved(err error) bool {
	var fe fileError
	return errors.As(err, &fe) || errors.Is(err, ErrNoChange) || errors.Is(err, ErrRejected) || errors.Is(err, ErrNotFound)
}

// branchRefused marks GitHub's refusal to create or move the rollback branch.
type branchRefused struct{ err error }

func (e branchRefused) Error() string { return e.err.Error() }
func (e branchRefused) Unwrap() error { return e.err }

// fileError marks a release file that cannot be edited as asked.
type fileError struct{ err error }

func (e fileError) Error() string { return e.err.Error() }
func (e fileError) Unwrap() error { return e.err }

// permanent marks a request that is wrong, or names what the repository
// does not have.
type permanent struct{ err error }

func (e permanent) Error() string { return e.err.Error() }
func (e permanent) Unwrap() error { return e.err }

// Permanent reports whether err says the rollback cannot be opened as asked
// however often Open is called again: a request that does not validate, a
// base branch or release file that does not exist, or a release file that
// cannot be edited at the configured paths (read fresh from GitHub, not
// from the cache), or GitHub refusing the App with a 403 that is not its
// rate limit (ErrForbidden: a permission the App lacks), or a 422 on the
// rollback branch on a base read fresh (a branch protection rule or a
// ruleset covering the rollback branches). Any other error
// (GitHub down, a rate limit, a conflict) may pass on a retry.
func Permanent(err error) bool {
	var p permanent
	var fe fileError
	return errors.As(err, &p) || errors.As(err, &fe)
}

// openAt makes the rollback on snapshot base.
func (p plan) openAt(ctx context.Context, gh GitHub, base Snapshot) (Result, error) {
	res := Result{Branch: p.branch}
	edited, err := EditReleaseFile(base.Content, p.changes)
	if err != nil {
		return res, fileError{fmt.Errorf("release file %q: %w", p.request.File, err)}
	}
	if bytes.Equal(edited, base.Content) {
		return res, fmt.Errorf("release file %q on %s at %s: %w", p.request.File, p.request.Base, base.Commit, ErrNoChange)
	}
	fresh, err := p.ensureCommit(ctx, gh, &res, base, edited)
	if err != nil {
		return res, err
	}
	p.branch = res.Branch
	return res, p.ensurePullRequest(ctx, gh, &res, fresh)
}
