package githubtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"path"
	"strings"
)

// Repository, contents, branch and commit reads, and the contents API's one-file commits.

func (s *Server) contentHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"GET /repos/{owner}/{repo}":                   s.getRepo,
		"GET /repos/{owner}/{repo}/contents/{path}":   s.getContent,
		"PUT /repos/{owner}/{repo}/contents/{path}":   s.putContent,
		"GET /repos/{owner}/{repo}/branches/{branch}": s.getBranch,
		"GET /repos/{owner}/{repo}/commits/{ref}":     s.getRepoCommit,
	}
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.repoJSON(s.repoFor(p)))
}

func (s *Server) getContent(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	repo := s.repoFor(p)
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = repo.defaultBranch
	}
	commit, ok := repo.git.resolve(ref)
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	entry, ok := repo.git.entryAt(commit, p["path"])
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	raw := strings.Contains(r.Header.Get("Accept"), ".raw")
	var body []byte
	switch {
	case raw && entry.Type == "blob":
		body = repo.git.blobs[entry.SHA]
	case entry.Type == "tree":
		body, _ = json.Marshal(s.dirJSON(repo, p["path"], entry.SHA, ref))
	default:
		body, _ = json.Marshal(s.fileJSON(repo, strings.Trim(p["path"], "/"), entry, ref))
	}
	s.mu.Unlock()
	writeCached(w, r, body, raw)
}

// writeCached answers with an ETag and honours If-None-Match with a 304, as GitHub does;
// a conditional request answered 304 does not count against the rate limit there.
func writeCached(w http.ResponseWriter, r *http.Request, body []byte, raw bool) {
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	w.Header().Set("ETag", etag)
	for _, candidate := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		if strings.TrimPrefix(strings.TrimSpace(candidate), "W/") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if raw {
		w.Header().Set("Content-Type", "application/vnd.github.raw; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func (s *Server) fileJSON(repo *repoState, filePath string, entry TreeEntry, ref string) map[string]any {
	kind := "file"
	switch {
	case entry.Type == "commit":
		kind = "submodule"
	case entry.Mode == "120000":
		kind = "symlink"
	}
	content := repo.git.blobs[entry.SHA]
	self := s.apiURL("repos/%s/contents/%s?ref=%s", repo.fullName(), filePath, ref)
	gitURL := s.apiURL("repos/%s/git/blobs/%s", repo.fullName(), entry.SHA)
	html := htmlURL("%s/blob/%s/%s", repo.fullName(), ref, filePath)
	out := map[string]any{
		"type": kind, "name": path.Base(filePath), "path": filePath, "sha": entry.SHA, "size": len(content),
		"url": self, "git_url": gitURL, "html_url": html,
		"download_url": s.apiURL("raw/%s/%s/%s", repo.fullName(), ref, filePath),
		"_links":       map[string]any{"self": self, "git": gitURL, "html": html},
	}
	if kind == "file" {
		out["encoding"] = "base64"
		out["content"] = wrapBase64(content)
	}
	return out
}

func (s *Server) dirJSON(repo *repoState, dirPath, treeSHA, ref string) []map[string]any {
	out := []map[string]any{}
	for _, e := range repo.git.trees[treeSHA] {
		full := strings.Trim(dirPath+"/"+e.Path, "/")
		item := s.fileJSON(repo, full, e, ref)
		delete(item, "content")
		delete(item, "encoding")
		if e.Type == "tree" {
			item["type"], item["size"], item["download_url"] = "dir", 0, nil
			item["git_url"] = s.apiURL("repos/%s/git/trees/%s", repo.fullName(), e.SHA)
		}
		out = append(out, item)
	}
	return out
}

func (s *Server) putContent(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		Message, Content, SHA, Branch string
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	content, err := base64.StdEncoding.DecodeString(in.Content)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, "content is not valid Base64")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	branch := orDefault(in.Branch, repo.defaultBranch)
	filePath := strings.Trim(p["path"], "/")
	head, branchExists := repo.git.refs[fullRef(branch)]
	if !branchExists && len(repo.git.refs) > 0 {
		writeError(w, http.StatusNotFound, "Branch "+branch+" not found")
		return
	}
	existing, exists := TreeEntry{}, false
	if branchExists {
		existing, exists = repo.git.entryAt(head, filePath)
	}
	switch {
	case exists && in.SHA == "":
		writeError(w, http.StatusUnprocessableEntity, `Invalid request. "sha" wasn't supplied.`)
		return
	case exists && in.SHA != existing.SHA:
		writeError(w, http.StatusConflict, filePath+" does not match "+in.SHA)
		return
	}
	text := string(content)
	sha, err := s.commitFilesLocked(repo, branch, map[string]*string{filePath: &text}, in.Message)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	entry, _ := repo.git.entryAt(sha, filePath)
	status := http.StatusCreated
	if exists {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{
		"content": s.fileJSON(repo, filePath, entry, branch),
		"commit":  s.gitCommitJSON(repo, repo.git.commits[sha]),
	})
}

func (s *Server) getBranch(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	sha, ok := repo.git.refs[fullRef(p["branch"])]
	if !ok {
		writeError(w, http.StatusNotFound, "Branch not found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name": p["branch"], "protected": false,
		"commit": s.repoCommitJSON(repo, repo.git.commits[sha]),
		"_links": map[string]any{
			"self": s.apiURL("repos/%s/branches/%s", repo.fullName(), p["branch"]),
			"html": htmlURL("%s/tree/%s", repo.fullName(), p["branch"]),
		},
		"protection_url": s.apiURL("repos/%s/branches/%s/protection", repo.fullName(), p["branch"]),
	})
}

func (s *Server) getRepoCommit(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	sha, ok := repo.git.resolve(p["ref"])
	if !ok {
		writeError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+p["ref"])
		return
	}
	writeJSON(w, http.StatusOK, s.repoCommitJSON(repo, repo.git.commits[sha]))
}

// repoCommitJSON is the commit as the repos API shows it: the git commit nested under
// "commit", GitHub users (unknown here) as null.
func (s *Server) repoCommitJSON(repo *repoState, c *Commit) map[string]any {
	git := s.gitCommitJSON(repo, c)
	parents := git["parents"]
	delete(git, "parents")
	delete(git, "sha")
	delete(git, "node_id")
	delete(git, "html_url")
	git["comment_count"] = 0
	return map[string]any{
		"sha": c.SHA, "node_id": "C_" + c.SHA, "commit": git,
		"url":      s.apiURL("repos/%s/commits/%s", repo.fullName(), c.SHA),
		"html_url": htmlURL("%s/commit/%s", repo.fullName(), c.SHA),
		"author":   nil, "committer": nil, "parents": parents, "files": []any{},
	}
}
