package rollbackpr

import "strings"

// Push is what a push webhook says about one branch, as far as a BaseCache cares.
type Push struct {
	// Repo is "owner/name"; Branch is the pushed branch without "refs/heads/".
	Repo   string
	Branch string
	// Before and After are the branch's head commit before and after the push; Tree is
	// the tree of After (head_commit.tree_id).
	Before, After string
	Tree          string
	// Forced and Deleted are the payload's forced and deleted.
	Forced, Deleted bool
	// Commits is how many commits the payload lists; Changed is every path one of them
	// added, modified or removed.
	Commits int
	Changed []string
}

// PushCommitsShown is the length at which a push's commit list may be cut short. The
// webhook description promises up to 2048 commits, GitHub's events list shows at most
// 20; a list this long is treated as possibly incomplete, which only costs a fresh read.
const PushCommitsShown = 20

// branchState is what is known about one branch: its head, the head's tree, and files
// at that head, by path.
type branchState struct {
	commit, tree string
	files        map[string]fileState
}

type fileState struct {
	content []byte
	blobSHA string
}

// afterPush returns what is still known about a branch after push p, and false when
// nothing is. It trusts a push only when it continues the head it knows: a push it
// missed, or one delivered out of order, would otherwise leave a file that changed in
// between marked as current.
func afterPush(b branchState, p Push) (branchState, bool) {
	switch {
	case p.After == b.commit:
		return b, true // a redelivery, or a push applied already
	case p.Deleted || p.Forced || zeroSHA(p.After) || p.Tree == "":
		return branchState{}, false
	case p.Before != b.commit:
		return branchState{}, false
	}
	next := branchState{commit: p.After, tree: p.Tree, files: map[string]fileState{}}
	if p.Commits == 0 || p.Commits >= PushCommitsShown {
		// The list of changed paths may be incomplete (or, for a push of commits the
		// branch already had elsewhere, empty): no file is known to be unchanged.
		return next, true
	}
	changed := map[string]bool{}
	for _, path := range p.Changed {
		changed[strings.Trim(path, "/")] = true
	}
	for path, f := range b.files {
		if !changed[path] {
			next.files[path] = f
		}
	}
	return next, true
}

func zeroSHA(sha string) bool { return strings.Trim(sha, "0") == "" }
