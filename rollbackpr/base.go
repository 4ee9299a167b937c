package rollbackpr

import (
	"context"
	"errors"
	"fmt"
)

// Snapshot is what a rollback needs from the base branch: its head commit and that
// commit's tree (the new commit's parent and base tree), and the release file there.
type Snapshot struct {
	Commit  string `json:"commit"`
	Tree    string `json:"tree"`
	Content []byte `json:"content"`
	BlobSHA string `json:"blob_sha"`
}

// BaseCache remembers Snapshots between rollbacks so that a warm rollback makes no read
// call at all. It is kept in step with the repository by push webhooks (Pushed), and
// repo is "owner/name" as in Request.Repository. MemoryCache implements it.
//
// Why a cache may be trusted: a snapshot is only ever a commit that was the base head,
// with that commit's own tree and file. The commit Open makes on it is correct for that
// commit. If the base has moved on since and the cache missed it, the rollback branch is
// based on an older commit of the base branch: GitHub merges it as any pull request
// from an older base, and shows a conflict if the release file changed in between —
// which is what a reviewer must see anyway. A stale snapshot cannot produce a wrong
// file silently. Open forgets a snapshot whenever using it fails, and retries at once
// with a fresh read when the failure says the base moved.
type BaseCache interface {
	// Get returns the snapshot of path at the head of branch, if known.
	Get(repo, branch, path string) (Snapshot, bool)
	// Put records a snapshot read from GitHub.
	Put(repo, branch, path string, s Snapshot)
	// Forget drops everything known about branch.
	Forget(repo, branch string)
	// Pushed applies a push to the branch it names.
	Pushed(p Push)
}

// readBase reads the snapshot from GitHub: two calls.
func (p plan) readBase(ctx context.Context, gh GitHub) (Snapshot, error) {
	head, err := gh.GetCommit(ctx, p.owner, p.repo, p.request.Base)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrRejected) {
		// GitHub answers 422 "No commit found for SHA" for an unknown branch name.
		return Snapshot{}, permanent{fmt.Errorf("base branch %q does not exist: %w", p.request.Base, err)}
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("read base branch %q: %w", p.request.Base, err)
	}
	s := Snapshot{Commit: head.GetSHA(), Tree: head.GetCommit().GetTree().GetSHA()}
	if s.Commit == "" || s.Tree == "" {
		return Snapshot{}, fmt.Errorf("base branch %q: GitHub gave commit %q with tree %q", p.request.Base, s.Commit, s.Tree)
	}
	s.Content, s.BlobSHA, err = gh.GetContents(ctx, p.owner, p.repo, p.request.File, s.Commit)
	if errors.Is(err, ErrNotFound) {
		return Snapshot{}, permanent{fmt.Errorf("release file %q does not exist on %s at %s: %w", p.request.File, p.request.Base, s.Commit, err)}
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("read release file %q: %w", p.request.File, err)
	}
	return s, nil
}
