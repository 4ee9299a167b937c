package githubtest

import (
	"fmt"
	"sort"
)

// PutFile commits content at path on branch ref of repo ("owner/name"), creating the
// branch when it does not exist yet, and returns the new commit's sha. It is how a test
// sets up a repository's files; the App sees them through the contents and Git Data APIs.
func (s *Server) PutFile(repo, ref, path, content string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(repo)
	sha, err := s.commitFilesLocked(r, ref, map[string]*string{path: &content}, fmt.Sprintf("githubtest: put %s", path))
	if err != nil {
		s.t.Fatalf("githubtest: PutFile(%q, %q, %q): %v", repo, ref, path, err)
	}
	return sha
}

// commitFilesLocked writes files (a nil content deletes) on top of branch ref as one
// commit and moves the branch to it.
func (s *Server) commitFilesLocked(r *repoState, ref string, files map[string]*string, message string) (string, error) {
	name := fullRef(ref)
	flat := map[string]TreeEntry{}
	var parents []string
	if parent, ok := r.git.refs[name]; ok {
		base, err := r.git.flatten(r.git.commits[parent].Tree)
		if err != nil {
			return "", err
		}
		flat, parents = base, []string{parent}
	}
	for path, content := range files {
		removeUnder(flat, path)
		if content != nil {
			flat[path] = TreeEntry{Path: path, Mode: "100644", Type: "blob", SHA: r.git.putBlob([]byte(*content))}
		}
	}
	tree, err := r.git.writeFlat(flat)
	if err != nil {
		return "", err
	}
	sig := s.signatureLocked(nil)
	sha := r.git.putCommit(Commit{Tree: tree, Message: message, Parents: parents, Author: sig, Committer: sig})
	r.git.refs[name] = sha
	return sha, nil
}

// FileAt reads path at ref (a branch, tag, full ref or commit sha) of repo.
func (s *Server) FileAt(repo, ref, path string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(repo)
	commit, ok := r.git.resolve(ref)
	if !ok {
		return "", false
	}
	entry, ok := r.git.entryAt(commit, path)
	if !ok || entry.Type != "blob" {
		return "", false
	}
	return string(r.git.blobs[entry.SHA]), true
}

// Files lists every file at ref of repo, path to content.
func (s *Server) Files(repo, ref string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(repo)
	out := map[string]string{}
	commit, ok := r.git.resolve(ref)
	if !ok {
		return out
	}
	flat, err := r.git.flatten(r.git.commits[commit].Tree)
	if err != nil {
		return out
	}
	for path, e := range flat {
		if e.Type == "blob" {
			out[path] = string(r.git.blobs[e.SHA])
		}
	}
	return out
}

// Commit returns the commit sha of repo.
func (s *Server) Commit(repo, sha string) (Commit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.repoLocked(repo).git.commits[sha]
	if !ok {
		return Commit{}, false
	}
	out := *c
	out.Parents = append([]string(nil), c.Parents...)
	return out, true
}

// Ref returns the commit sha a ref of repo points at; ref may be "main", "heads/main" or
// "refs/heads/main" (and likewise for tags).
func (s *Server) Ref(repo, ref string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sha, ok := s.repoLocked(repo).git.refs[fullRef(ref)]
	return sha, ok
}

// Refs lists the full names of repo's refs.
func (s *Server) Refs(repo string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.repoLocked(repo).git.refs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
