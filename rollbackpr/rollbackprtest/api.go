package rollbackprtest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"
	"github.com/ripcord/ripcord/rollbackpr"
)

// The rollbackpr.GitHub methods. Each records its call, then applies a planned failure
// (before or after its effect), as GitHub's REST API would behave for the same request.

func (f *Fake) GetRef(_ context.Context, owner, repoName, ref string) (*github.Reference, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fail, ok := f.call("GetRef"); ok {
		return nil, fail.err
	}
	full := "refs/" + strings.TrimPrefix(ref, "refs/")
	sha, ok := f.repo(owner + "/" + repoName).refs[full]
	if !ok {
		return nil, fmt.Errorf("fake GitHub: ref %s: %w", full, rollbackpr.ErrNotFound)
	}
	return &github.Reference{Ref: &full, Object: &github.GitObject{SHA: github.String(sha), Type: github.String("commit")}}, nil
}

func (f *Fake) GetContents(_ context.Context, owner, repoName, path, ref string) ([]byte, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fail, ok := f.call("GetContents"); ok {
		return nil, "", fail.err
	}
	r := f.repo(owner + "/" + repoName)
	c, ok := r.commits[f.resolve(r, ref)]
	if !ok {
		return nil, "", fmt.Errorf("fake GitHub: ref %s: %w", ref, rollbackpr.ErrNotFound)
	}
	content, ok := c.files[path]
	if !ok {
		return nil, "", fmt.Errorf("fake GitHub: %s at %s: %w", path, ref, rollbackpr.ErrNotFound)
	}
	return append([]byte(nil), content...), blobSHA(content), nil
}

func (f *Fake) CreateRef(_ context.Context, owner, repoName string, ref *github.Reference) (*github.Reference, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail, failing := f.call("CreateRef")
	if failing && !fail.after {
		return nil, fail.err
	}
	r := f.repo(owner + "/" + repoName)
	name, sha := ref.GetRef(), ref.GetObject().GetSHA()
	if !strings.HasPrefix(name, "refs/") || strings.Count(name, "/") < 2 {
		return nil, fmt.Errorf("fake GitHub: 422 %q is not a fully qualified ref: %w", name, rollbackpr.ErrRejected)
	}
	if _, exists := r.refs[name]; exists {
		return nil, fmt.Errorf("fake GitHub: 422 Reference already exists: %w", rollbackpr.ErrAlreadyExists)
	}
	if _, ok := r.commits[sha]; !ok {
		return nil, fmt.Errorf("fake GitHub: 422 Object does not exist: %s: %w", sha, rollbackpr.ErrRejected)
	}
	r.refs[name] = sha
	if failing {
		return nil, fail.err
	}
	return &github.Reference{Ref: &name, Object: &github.GitObject{SHA: &sha, Type: github.String("commit")}}, nil
}

func (f *Fake) UpdateRef(_ context.Context, owner, repoName string, ref *github.Reference, force bool) (*github.Reference, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail, failing := f.call("UpdateRef")
	if failing && !fail.after {
		return nil, fail.err
	}
	r := f.repo(owner + "/" + repoName)
	name := "refs/" + strings.TrimPrefix(ref.GetRef(), "refs/")
	sha := ref.GetObject().GetSHA()
	current, ok := r.refs[name]
	if !ok {
		return nil, fmt.Errorf("fake GitHub: ref %s: %w", name, rollbackpr.ErrNotFound)
	}
	if _, ok := r.commits[sha]; !ok {
		return nil, fmt.Errorf("fake GitHub: 422 Object does not exist: %s: %w", sha, rollbackpr.ErrRejected)
	}
	if !force && !ancestor(r, current, sha) {
		return nil, fmt.Errorf("fake GitHub: 422 Update is not a fast forward: %w", rollbackpr.ErrRejected)
	}
	r.refs[name] = sha
	if failing {
		return nil, fail.err
	}
	return &github.Reference{Ref: &name, Object: &github.GitObject{SHA: &sha, Type: github.String("commit")}}, nil
}

func (f *Fake) FindPullRequest(_ context.Context, owner, repoName, head, base string) (*github.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fail, ok := f.call("FindPullRequest"); ok {
		return nil, fail.err
	}
	var found *PullRequest
	for _, p := range f.repo(owner + "/" + repoName).pulls {
		if p.State != "open" || p.Head != head {
			continue
		}
		if p.Base == base {
			return p.github(owner + "/" + repoName), nil
		}
		if found == nil {
			found = p
		}
	}
	if found == nil {
		return nil, nil
	}
	return found.github(owner + "/" + repoName), nil
}

func (f *Fake) CreatePullRequest(_ context.Context, owner, repoName string, pr *github.NewPullRequest) (*github.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail, failing := f.call("CreatePullRequest")
	if failing && !fail.after {
		return nil, fail.err
	}
	name := owner + "/" + repoName
	r := f.repo(name)
	head, okHead := r.refs["refs/heads/"+pr.GetHead()]
	base, okBase := r.refs["refs/heads/"+pr.GetBase()]
	switch {
	case pr.GetTitle() == "":
		return nil, fmt.Errorf("fake GitHub: 422 title is required: %w", rollbackpr.ErrRejected)
	case !okHead || !okBase:
		return nil, fmt.Errorf("fake GitHub: 422 head %q or base %q is not a branch: %w", pr.GetHead(), pr.GetBase(), rollbackpr.ErrRejected)
	case ancestor(r, head, base):
		return nil, fmt.Errorf("fake GitHub: 422 No commits between %s and %s: %w", pr.GetBase(), pr.GetHead(), rollbackpr.ErrRejected)
	}
	for _, p := range r.pulls {
		if p.State == "open" && p.Head == pr.GetHead() && p.Base == pr.GetBase() {
			return nil, fmt.Errorf("fake GitHub: 422 A pull request already exists for %s:%s: %w", owner, pr.GetHead(), rollbackpr.ErrAlreadyExists)
		}
	}
	p := &PullRequest{Number: f.nextNum, Title: pr.GetTitle(), Body: pr.GetBody(), Head: pr.GetHead(), Base: pr.GetBase(), State: "open"}
	f.nextNum++
	r.pulls = append(r.pulls, p)
	if failing {
		return nil, fail.err
	}
	return p.github(name), nil
}

func (f *Fake) EditPullRequest(_ context.Context, owner, repoName string, number int, pr *github.PullRequest) (*github.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail, failing := f.call("EditPullRequest")
	if failing && !fail.after {
		return nil, fail.err
	}
	p := f.pull(owner+"/"+repoName, number)
	if p == nil {
		return nil, fmt.Errorf("fake GitHub: pull request #%d: %w", number, rollbackpr.ErrNotFound)
	}
	if pr.Title != nil {
		p.Title = pr.GetTitle()
	}
	if pr.Body != nil {
		p.Body = pr.GetBody()
	}
	if failing {
		return nil, fail.err
	}
	return p.github(owner + "/" + repoName), nil
}

func (f *Fake) AddLabels(_ context.Context, owner, repoName string, number int, labels []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail, failing := f.call("AddLabels")
	if failing && !fail.after {
		return fail.err
	}
	p := f.pull(owner+"/"+repoName, number)
	if p == nil {
		return fmt.Errorf("fake GitHub: issue #%d: %w", number, rollbackpr.ErrNotFound)
	}
	for _, l := range labels {
		if !contains(p.Labels, l) {
			p.Labels = append(p.Labels, l)
		}
	}
	if failing {
		return fail.err
	}
	return nil
}

func (f *Fake) pull(repoName string, number int) *PullRequest {
	for _, p := range f.repo(repoName).pulls {
		if p.Number == number {
			return p
		}
	}
	return nil
}

func (p *PullRequest) github(repoName string) *github.PullRequest {
	out := &github.PullRequest{
		Number:  github.Int(p.Number),
		Title:   github.String(p.Title),
		Body:    github.String(p.Body),
		State:   github.String(p.State),
		HTMLURL: github.String("https://github.com/" + repoName + "/pull/" + strconv.Itoa(p.Number)),
		Head:    &github.PullRequestBranch{Ref: github.String(p.Head)},
		Base:    &github.PullRequestBranch{Ref: github.String(p.Base)},
	}
	for _, l := range p.Labels {
		out.Labels = append(out.Labels, &github.Label{Name: github.String(l)})
	}
	return out
}

// ancestor reports whether a is b or one of b's ancestors.
func ancestor(r *repo, a, b string) bool {
	seen := map[string]bool{}
	queue := []string{b}
	for len(queue) > 0 {
		sha := queue[0]
		queue = queue[1:]
		if sha == a {
			return true
		}
		if seen[sha] || r.commits[sha] == nil {
			continue
		}
		seen[sha] = true
		queue = append(queue, r.commits[sha].parents...)
	}
	return false
}

// diff lists the files that differ between two trees, as GitHub's commit API does.
func diff(before, after map[string][]byte) []*github.CommitFile {
	var paths []string
	for p := range after {
		if old, ok := before[p]; !ok || string(old) != string(after[p]) {
			paths = append(paths, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out []*github.CommitFile
	for _, p := range paths {
		file := &github.CommitFile{Filename: github.String(p)}
		content, ok := after[p]
		_, had := before[p]
		switch {
		case !ok:
			file.Status = github.String("removed")
		case !had:
			file.Status, file.SHA = github.String("added"), github.String(blobSHA(content))
		default:
			file.Status, file.SHA = github.String("modified"), github.String(blobSHA(content))
		}
		out = append(out, file)
	}
	return out
}

// blobSHA is git's object id for a blob, as GitHub reports it.
func blobSHA(content []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// treeSHA stands in for a tree's id: equal trees get equal ids.
func treeSHA(files map[string][]byte) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha1.New()
	for _, p := range paths {
		h.Write([]byte(p + "\x00" + blobSHA(files[p]) + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
