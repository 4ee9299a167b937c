package githubtest

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// The Git Data API: blobs, trees, commits and refs, enough that a branch and a commit
// made through it can be read back (by the App through the API, by the test through
// Commit, Ref and FileAt).

func (s *Server) gitHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"POST /repos/{owner}/{repo}/git/blobs":               s.createBlob,
		"GET /repos/{owner}/{repo}/git/blobs/{file_sha}":     s.getBlob,
		"POST /repos/{owner}/{repo}/git/trees":               s.createTree,
		"GET /repos/{owner}/{repo}/git/trees/{tree_sha}":     s.getTree,
		"POST /repos/{owner}/{repo}/git/commits":             s.createCommit,
		"GET /repos/{owner}/{repo}/git/commits/{commit_sha}": s.getGitCommit,
		"GET /repos/{owner}/{repo}/git/ref/{ref}":            s.getRef,
		"GET /repos/{owner}/{repo}/git/matching-refs/{ref}":  s.matchingRefs,
		"POST /repos/{owner}/{repo}/git/refs":                s.createRef,
		"PATCH /repos/{owner}/{repo}/git/refs/{ref}":         s.updateRef,
		"DELETE /repos/{owner}/{repo}/git/refs/{ref}":        s.deleteRef,
	}
}

func (s *Server) createBlob(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct{ Content, Encoding string }
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	content := []byte(in.Content)
	if in.Encoding == "base64" {
		decoded, err := base64.StdEncoding.DecodeString(in.Content)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, "content is not valid base64")
			return
		}
		content = decoded
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	sha := repo.git.putBlob(content)
	writeJSON(w, http.StatusCreated, map[string]any{"sha": sha, "url": s.apiURL("repos/%s/git/blobs/%s", repo.fullName(), sha)})
}

func (s *Server) getBlob(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	content, ok := repo.git.blobs[p["file_sha"]]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"sha": p["file_sha"], "node_id": "B_" + p["file_sha"], "size": len(content),
		"url":     s.apiURL("repos/%s/git/blobs/%s", repo.fullName(), p["file_sha"]),
		"content": wrapBase64(content), "encoding": "base64",
	})
}

// wrapBase64 encodes as GitHub does in contents and blobs: base64 in lines of 60.
func wrapBase64(content []byte) string {
	enc := base64.StdEncoding.EncodeToString(content)
	var b strings.Builder
	for len(enc) > 60 {
		b.WriteString(enc[:60] + "\n")
		enc = enc[60:]
	}
	b.WriteString(enc + "\n")
	return b.String()
}

type treeInput struct {
	BaseTree string           `json:"base_tree"`
	Tree     []map[string]any `json:"tree"`
}

func (s *Server) createTree(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in treeInput
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	flat := map[string]TreeEntry{}
	if in.BaseTree != "" {
		base, err := repo.git.flatten(in.BaseTree)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, "base_tree is not a valid tree: "+err.Error())
			return
		}
		flat = base
	}
	for i, entry := range in.Tree {
		if msg := applyTreeEntry(repo.git, flat, entry); msg != "" {
			writeError(w, http.StatusUnprocessableEntity, "tree."+itoa(i)+": "+msg)
			return
		}
	}
	sha, err := repo.git.writeFlat(flat)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, s.treeJSON(repo, sha, false))
}

// applyTreeEntry applies one entry of a create-tree body to a flattened tree; it returns
// what is wrong with the entry, or "".
func applyTreeEntry(g *gitObjects, flat map[string]TreeEntry, entry map[string]any) string {
	path, _ := entry["path"].(string)
	mode, _ := entry["mode"].(string)
	kind, _ := entry["type"].(string)
	path = strings.Trim(path, "/")
	if path == "" {
		return "path is required"
	}
	shaValue, hasSHA := entry["sha"]
	content, hasContent := entry["content"].(string)
	removeUnder(flat, path)
	switch {
	case hasContent:
		flat[path] = TreeEntry{Path: path, Mode: orDefault(mode, "100644"), Type: "blob", SHA: g.putBlob([]byte(content))}
	case hasSHA && shaValue == nil:
		// sha: null deletes the path (already removed above).
	case hasSHA:
		sha, _ := shaValue.(string)
		return graft(g, flat, path, mode, kind, sha)
	default:
		return "either sha or content is required"
	}
	return ""
}

func graft(g *gitObjects, flat map[string]TreeEntry, path, mode, kind, sha string) string {
	switch kind {
	case "tree":
		sub, err := g.flatten(sha)
		if err != nil {
			return "sha " + sha + " is not a tree"
		}
		for p, e := range sub {
			e.Path = path + "/" + p
			flat[e.Path] = e
		}
	case "commit":
		flat[path] = TreeEntry{Path: path, Mode: orDefault(mode, "160000"), Type: "commit", SHA: sha}
	default:
		if _, ok := g.blobs[sha]; !ok {
			return "sha " + sha + " is not a blob"
		}
		flat[path] = TreeEntry{Path: path, Mode: orDefault(mode, "100644"), Type: "blob", SHA: sha}
	}
	return ""
}

func removeUnder(flat map[string]TreeEntry, path string) {
	delete(flat, path)
	for p := range flat {
		if strings.HasPrefix(p, path+"/") {
			delete(flat, p)
		}
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (s *Server) getTree(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	sha := p["tree_sha"]
	if _, ok := repo.git.trees[sha]; !ok {
		// GitHub also takes a commit sha or a branch or tag name here.
		commit, found := repo.git.resolve(sha)
		if !found {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		sha = repo.git.commits[commit].Tree
	}
	recursive := r.URL.Query().Get("recursive")
	writeJSON(w, http.StatusOK, s.treeJSON(repo, sha, recursive != "" && recursive != "0" && recursive != "false"))
}

func (s *Server) treeJSON(repo *repoState, sha string, recursive bool) map[string]any {
	var entries []map[string]any
	var walk func(treeSHA, prefix string)
	walk = func(treeSHA, prefix string) {
		for _, e := range repo.git.trees[treeSHA] {
			item := map[string]any{"path": prefix + e.Path, "mode": e.Mode, "type": e.Type, "sha": e.SHA}
			switch e.Type {
			case "blob":
				item["size"] = len(repo.git.blobs[e.SHA])
				item["url"] = s.apiURL("repos/%s/git/blobs/%s", repo.fullName(), e.SHA)
			case "tree":
				item["url"] = s.apiURL("repos/%s/git/trees/%s", repo.fullName(), e.SHA)
			}
			entries = append(entries, item)
			if recursive && e.Type == "tree" {
				walk(e.SHA, prefix+e.Path+"/")
			}
		}
	}
	walk(sha, "")
	if entries == nil {
		entries = []map[string]any{}
	}
	return map[string]any{"sha": sha, "url": s.apiURL("repos/%s/git/trees/%s", repo.fullName(), sha), "tree": entries, "truncated": false}
}

type signatureInput struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

func (s *Server) createCommit(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		Message   string          `json:"message"`
		Tree      string          `json:"tree"`
		Parents   []string        `json:"parents"`
		Author    *signatureInput `json:"author"`
		Committer *signatureInput `json:"committer"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	if _, ok := repo.git.trees[in.Tree]; !ok {
		writeError(w, http.StatusUnprocessableEntity, "Tree SHA does not exist")
		return
	}
	for _, parent := range in.Parents {
		if _, ok := repo.git.commits[parent]; !ok {
			writeError(w, http.StatusUnprocessableEntity, "Parent SHA does not exist or is not a commit object")
			return
		}
	}
	author := s.signatureLocked(in.Author)
	committer := author
	if in.Committer != nil {
		committer = s.signatureLocked(in.Committer)
	}
	sha := repo.git.putCommit(Commit{Tree: in.Tree, Message: in.Message, Parents: in.Parents, Author: author, Committer: committer})
	writeJSON(w, http.StatusCreated, s.gitCommitJSON(repo, repo.git.commits[sha]))
}

func (s *Server) signatureLocked(in *signatureInput) Signature {
	sig := Signature{Name: BotLogin, Email: BotLogin + "@users.noreply.github.com", Date: s.nowLocked()}
	if in == nil {
		return sig
	}
	sig.Name, sig.Email = in.Name, in.Email
	if t, err := parseTime(in.Date); err == nil && in.Date != "" {
		sig.Date = t
	}
	return sig
}

func (s *Server) getGitCommit(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	c, ok := repo.git.commits[p["commit_sha"]]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.gitCommitJSON(repo, c))
}

func (s *Server) gitCommitJSON(repo *repoState, c *Commit) map[string]any {
	parents := []map[string]any{}
	for _, sha := range c.Parents {
		parents = append(parents, map[string]any{
			"sha": sha, "url": s.apiURL("repos/%s/git/commits/%s", repo.fullName(), sha),
			"html_url": htmlURL("%s/commit/%s", repo.fullName(), sha),
		})
	}
	sig := func(g Signature) map[string]any {
		return map[string]any{"name": g.Name, "email": g.Email, "date": timeJSON(g.Date)}
	}
	return map[string]any{
		"sha": c.SHA, "node_id": "C_" + c.SHA, "message": c.Message,
		"url":      s.apiURL("repos/%s/git/commits/%s", repo.fullName(), c.SHA),
		"html_url": htmlURL("%s/commit/%s", repo.fullName(), c.SHA),
		"author":   sig(c.Author), "committer": sig(c.Committer),
		"tree":    map[string]any{"sha": c.Tree, "url": s.apiURL("repos/%s/git/trees/%s", repo.fullName(), c.Tree)},
		"parents": parents,
		"verification": map[string]any{
			"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil,
		},
	}
}
