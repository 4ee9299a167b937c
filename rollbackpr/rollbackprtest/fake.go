// Package rollbackprtest is an in-memory GitHub for rollbackpr: repositories with refs,
// commits, blobs and trees (whole file trees), pull requests and labels, behaving like
// GitHub where the rollback flow depends on it — "already exists" on a second branch or
// pull request, a 422 for a base_tree that is not a tree or a parent that is not a
// commit, "no commits between" for an empty pull request, pull requests closed when
// their head branch is deleted. It records every call
// and can fail any call before or after its effect, to test resuming after a crash.
package rollbackprtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ripcord/ripcord/rollbackpr"
)

// Fake implements rollbackpr.GitHub in memory. The zero value is not usable; call New.
type Fake struct {
	mu       sync.Mutex
	repos    map[string]*repo // by "owner/name"
	calls    []string
	failures map[string][]failure
	seq      int // makes every commit sha unique, like a commit timestamp would
	nextNum  int
}

type repo struct {
	refs    map[string]string // "refs/heads/main" → commit sha
	commits map[string]*commit
	blobs   map[string][]byte
	trees   map[string]map[string][]byte // tree sha → the whole tree, by path
	pulls   []*PullRequest
}

type commit struct {
	sha     string
	parents []string
	message string
	tree    string
	files   map[string][]byte // the whole tree, by path
}

type failure struct {
	err   error
	after bool // the call takes effect, then reports err (a lost response)
}

// PullRequest is the fake's record of a pull request.
type PullRequest struct {
	Number int
	Title  string
	Body   string
	Head   string
	Base   string
	State  string // "open" or "closed"
	Merged bool
	Labels []string
}

// New returns an empty fake GitHub.
func New() *Fake {
	return &Fake{repos: map[string]*repo{}, failures: map[string][]failure{}, nextNum: 1}
}

// Push commits files (path → content) on top of branch in repo ("owner/name"), creating
// the repository and the branch as needed, and returns the new commit's sha.
func (f *Fake) Push(repoName, branch, message string, files map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repo(repoName)
	tree := map[string][]byte{}
	var parents []string
	if head, ok := r.refs["refs/heads/"+branch]; ok {
		parents = []string{head}
		for p, c := range r.commits[head].files {
			tree[p] = c
		}
	}
	for p, c := range files {
		tree[p] = []byte(c)
	}
	c := f.newCommit(r, parents, message, tree)
	r.refs["refs/heads/"+branch] = c.sha
	return c.sha
}

// Fail makes the next call of method (a rollbackpr.GitHub method name) return err
// without any effect, as if the process died just before it.
func (f *Fake) Fail(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[method] = append(f.failures[method], failure{err: err})
}

// FailAfter makes the next call of method take effect and then return err, as if the
// response was lost.
func (f *Fake) FailAfter(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[method] = append(f.failures[method], failure{err: err, after: true})
}

// Calls returns the names of the methods called so far, in order.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// ResetCalls forgets the calls recorded so far.
func (f *Fake) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// Branch returns the commit a branch points at.
func (f *Fake) Branch(repoName, branch string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sha, ok := f.repo(repoName).refs["refs/heads/"+branch]
	return sha, ok
}

// Branches lists the branch names of a repository, sorted.
func (f *Fake) Branches(repoName string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for ref := range f.repo(repoName).refs {
		out = append(out, strings.TrimPrefix(ref, "refs/heads/"))
	}
	sort.Strings(out)
	return out
}

// File returns a file's content at a branch or commit sha.
func (f *Fake) File(repoName, ref, path string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repo(repoName)
	c, ok := r.commits[f.resolve(r, ref)]
	if !ok {
		return nil, false
	}
	content, ok := c.files[path]
	return content, ok
}

// Commit returns a commit's message and parents.
func (f *Fake) Commit(repoName, sha string) (message string, parents []string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.repo(repoName).commits[sha]
	if !ok {
		return "", nil, false
	}
	return c.message, append([]string(nil), c.parents...), true
}

// CommitCount is how many commits a repository holds.
func (f *Fake) CommitCount(repoName string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.repo(repoName).commits)
}

// PullRequests returns copies of a repository's pull requests, oldest first.
func (f *Fake) PullRequests(repoName string) []PullRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []PullRequest
	for _, p := range f.repo(repoName).pulls {
		c := *p
		c.Labels = append([]string(nil), p.Labels...)
		out = append(out, c)
	}
	return out
}

// DeleteBranch deletes a branch and, as GitHub does, closes the open pull requests whose
// head it was.
func (f *Fake) DeleteBranch(repoName, branch string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repo(repoName)
	delete(r.refs, "refs/heads/"+branch)
	for _, p := range r.pulls {
		if p.Head == branch && p.State == "open" {
			p.State = "closed"
		}
	}
}

// Close closes an open pull request without merging it, as a person does on GitHub.
func (f *Fake) Close(repoName string, number int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.repo(repoName).pulls {
		if p.Number == number && p.State == "open" {
			p.State = "closed"
			return nil
		}
	}
	return fmt.Errorf("fake GitHub: no open pull request #%d in %s", number, repoName)
}

// Merge fast-forwards a pull request's base to its head and closes it as merged.
func (f *Fake) Merge(repoName string, number int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repo(repoName)
	for _, p := range r.pulls {
		if p.Number == number && p.State == "open" {
			r.refs["refs/heads/"+p.Base] = r.refs["refs/heads/"+p.Head]
			p.State, p.Merged = "closed", true
			return nil
		}
	}
	return fmt.Errorf("fake GitHub: no open pull request #%d in %s", number, repoName)
}

// call records a call and returns the failure planned for it, if any.
func (f *Fake) call(method string) (failure, bool) {
	f.calls = append(f.calls, method)
	q := f.failures[method]
	if len(q) == 0 {
		return failure{}, false
	}
	f.failures[method] = q[1:]
	return q[0], true
}

func (f *Fake) repo(name string) *repo {
	r, ok := f.repos[name]
	if !ok {
		r = &repo{refs: map[string]string{}, commits: map[string]*commit{}, blobs: map[string][]byte{}, trees: map[string]map[string][]byte{}}
		f.repos[name] = r
	}
	return r
}

// resolve turns a branch name, "heads/x", "refs/heads/x" or a commit sha into a sha.
func (f *Fake) resolve(r *repo, ref string) string {
	for _, full := range []string{ref, "refs/" + ref, "refs/heads/" + ref} {
		if sha, ok := r.refs[full]; ok {
			return sha
		}
	}
	return ref
}

func (f *Fake) newCommit(r *repo, parents []string, message string, files map[string][]byte) *commit {
	f.seq++
	h := sha1.Sum([]byte("commit " + strconv.Itoa(f.seq) + "\n" + strings.Join(parents, " ") + "\n" + message))
	c := &commit{sha: hex.EncodeToString(h[:]), parents: parents, message: message, tree: r.putTree(files), files: files}
	r.commits[c.sha] = c
	return c
}

func (r *repo) putBlob(content []byte) string {
	sha := blobSHA(content)
	r.blobs[sha] = append([]byte(nil), content...)
	return sha
}

// putTree stores a whole tree under its id; equal trees share one.
func (r *repo) putTree(files map[string][]byte) string {
	sha := treeSHA(files)
	if _, ok := r.trees[sha]; !ok {
		r.trees[sha] = files
	}
	return sha
}

// Tree returns the tree sha of a commit, as GitHub's commit.tree.sha.
func (f *Fake) Tree(repoName, sha string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.repo(repoName).commits[sha]
	if !ok {
		return "", false
	}
	return c.tree, true
}

var _ rollbackpr.GitHub = (*Fake)(nil)
