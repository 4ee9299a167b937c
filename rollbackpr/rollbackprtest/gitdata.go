package rollbackprtest

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"
	"github.com/ripcord/ripcord/rollbackpr"
)

// The Git Data API and the commit read: blobs, trees on a base tree, commits with
// parents, and a commit (or branch head) with its tree, parents and changed files.

func (f *Fake) GetCommit(_ context.Context, owner, repoName, ref string) (*github.RepositoryCommit, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fail, ok := f.call("GetCommit"); ok {
		return nil, fail.err
	}
	r := f.repo(owner + "/" + repoName)
	c, ok := r.commits[f.resolve(r, ref)]
	if !ok {
		return nil, fmt.Errorf("fake GitHub: 422 No commit found for SHA: %s: %w", ref, rollbackpr.ErrRejected)
	}
	out := &github.RepositoryCommit{
		SHA:    github.String(c.sha),
		Commit: &github.Commit{SHA: github.String(c.sha), Message: github.String(c.message), Tree: &github.Tree{SHA: github.String(c.tree)}},
	}
	for _, p := range c.parents {
		out.Parents = append(out.Parents, &github.Commit{SHA: github.String(p)})
	}
	var before map[string][]byte
	if len(c.parents) > 0 {
		before = r.commits[c.parents[0]].files
	}
	out.Files = diff(before, c.files)
	return out, nil
}

// CompareCommits lists the commits reachable from head and not from base, every one after
// its parents, as GitHub's compare does (without its limit of 250).
func (f *Fake) CompareCommits(_ context.Context, owner, repoName, base, head string) (*github.CommitsComparison, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fail, ok := f.call("CompareCommits"); ok {
		return nil, fail.err
	}
	r := f.repo(owner + "/" + repoName)
	baseSHA, headSHA := f.resolve(r, base), f.resolve(r, head)
	if r.commits[baseSHA] == nil || r.commits[headSHA] == nil {
		return nil, fmt.Errorf("fake GitHub: compare %s...%s: %w", base, head, rollbackpr.ErrNotFound)
	}
	var out []*github.RepositoryCommit
	done := map[string]bool{}
	var visit func(sha string)
	visit = func(sha string) {
		if done[sha] || r.commits[sha] == nil || ancestor(r, sha, baseSHA) {
			return
		}
		done[sha] = true
		c := r.commits[sha]
		for _, p := range c.parents {
			visit(p)
		}
		rc := &github.RepositoryCommit{SHA: github.String(c.sha),
			Commit: &github.Commit{SHA: github.String(c.sha), Message: github.String(c.message), Tree: &github.Tree{SHA: github.String(c.tree)}}}
		for _, p := range c.parents {
			rc.Parents = append(rc.Parents, &github.Commit{SHA: github.String(p)})
		}
		out = append(out, rc)
	}
	visit(headSHA)
	return &github.CommitsComparison{Commits: out, TotalCommits: github.Int(len(out)), AheadBy: github.Int(len(out))}, nil
}

func (f *Fake) CreateBlob(_ context.Context, owner, repoName string, content []byte) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail, failing := f.call("CreateBlob")
	if failing && !fail.after {
		return "", fail.err
	}
	sha := f.repo(owner + "/" + repoName).putBlob(content)
	if failing {
		return "", fail.err
	}
	return sha, nil
}

// CreateTree takes entries by blob sha or inline content; a nil sha without content
// deletes the path, as GitHub does.
func (f *Fake) CreateTree(_ context.Context, owner, repoName, baseTree string, entries []*github.TreeEntry) (*github.Tree, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail, failing := f.call("CreateTree")
	if failing && !fail.after {
		return nil, fail.err
	}
	r := f.repo(owner + "/" + repoName)
	files := map[string][]byte{}
	if baseTree != "" {
		base, ok := r.trees[baseTree]
		if !ok {
			// GitHub takes only a tree sha here; a commit sha is refused like any other.
			return nil, fmt.Errorf("fake GitHub: 422 base_tree %s is not a tree: %w", baseTree, rollbackpr.ErrRejected)
		}
		for p, c := range base {
			files[p] = c
		}
	}
	for i, e := range entries {
		path := strings.Trim(e.GetPath(), "/")
		switch {
		case path == "" || e.GetType() != "blob" || e.GetMode() != "100644" && e.GetMode() != "100755":
			return nil, fmt.Errorf("fake GitHub: 422 tree[%d]: path, type blob and a file mode are required: %w", i, rollbackpr.ErrRejected)
		case e.Content != nil:
			files[path] = []byte(e.GetContent())
		case e.SHA == nil:
			delete(files, path)
		default:
			content, ok := r.blobs[e.GetSHA()]
			if !ok {
				return nil, fmt.Errorf("fake GitHub: 422 tree[%d].sha %s is not a blob: %w", i, e.GetSHA(), rollbackpr.ErrRejected)
			}
			files[path] = content
		}
	}
	sha := r.putTree(files)
	if failing {
		return nil, fail.err
	}
	return &github.Tree{SHA: github.String(sha)}, nil
}

func (f *Fake) CreateCommit(_ context.Context, owner, repoName string, commit *github.Commit) (*github.Commit, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail, failing := f.call("CreateCommit")
	if failing && !fail.after {
		return nil, fail.err
	}
	r := f.repo(owner + "/" + repoName)
	files, ok := r.trees[commit.GetTree().GetSHA()]
	if !ok {
		return nil, fmt.Errorf("fake GitHub: 422 Tree SHA %q does not exist: %w", commit.GetTree().GetSHA(), rollbackpr.ErrRejected)
	}
	if commit.GetMessage() == "" {
		return nil, fmt.Errorf("fake GitHub: 422 message is required: %w", rollbackpr.ErrRejected)
	}
	var parents []string
	for _, p := range commit.Parents {
		if _, ok := r.commits[p.GetSHA()]; !ok {
			return nil, fmt.Errorf("fake GitHub: 422 Parent SHA %s does not exist or is not a commit object: %w", p.GetSHA(), rollbackpr.ErrRejected)
		}
		parents = append(parents, p.GetSHA())
	}
	c := f.newCommit(r, parents, commit.GetMessage(), files)
	if failing {
		return nil, fail.err
	}
	out := &github.Commit{SHA: github.String(c.sha), Message: github.String(c.message), Tree: &github.Tree{SHA: github.String(c.tree)}}
	for _, p := range parents {
		out.Parents = append(out.Parents, &github.Commit{SHA: github.String(p)})
	}
	return out, nil
}
