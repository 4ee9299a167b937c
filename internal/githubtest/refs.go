package githubtest

import (
	"net/http"
	"sort"
	"strings"
)

// Git refs: read, list by prefix, create, move (fast-forward unless forced) and delete,
// with GitHub's refusals.

func (s *Server) refJSON(repo *repoState, name, sha string) map[string]any {
	return map[string]any{
		"ref": name, "node_id": "REF_" + name,
		"url":    s.apiURL("repos/%s/git/%s", repo.fullName(), name),
		"object": map[string]any{"type": "commit", "sha": sha, "url": s.apiURL("repos/%s/git/commits/%s", repo.fullName(), sha)},
	}
}

func (s *Server) getRef(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	name := "refs/" + p["ref"]
	sha, ok := repo.git.refs[name]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.refJSON(repo, name, sha))
}

func (s *Server) matchingRefs(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	prefix := "refs/" + p["ref"]
	var names []string
	for name := range repo.git.refs {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := []map[string]any{}
	for _, name := range names {
		out = append(out, s.refJSON(repo, name, repo.git.refs[name]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createRef(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct{ Ref, SHA string }
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	switch {
	case !strings.HasPrefix(in.Ref, "refs/") || strings.Count(in.Ref, "/") < 2:
		writeError(w, http.StatusUnprocessableEntity, "Reference name must start with 'refs/' and have at least two slashes.")
	case repo.git.commits[in.SHA] == nil:
		writeError(w, http.StatusUnprocessableEntity, "Object does not exist")
	case repo.git.refs[in.Ref] != "":
		writeError(w, http.StatusUnprocessableEntity, "Reference already exists")
	default:
		repo.git.refs[in.Ref] = in.SHA
		writeJSON(w, http.StatusCreated, s.refJSON(repo, in.Ref, in.SHA))
	}
}

func (s *Server) updateRef(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	name := "refs/" + p["ref"]
	old, exists := repo.git.refs[name]
	switch {
	case !exists:
		writeError(w, http.StatusUnprocessableEntity, "Reference does not exist")
	case repo.git.commits[in.SHA] == nil:
		writeError(w, http.StatusUnprocessableEntity, "Object does not exist")
	case !in.Force && !repo.git.isAncestor(old, in.SHA):
		writeError(w, http.StatusUnprocessableEntity, "Update is not a fast forward")
	default:
		repo.git.refs[name] = in.SHA
		writeJSON(w, http.StatusOK, s.refJSON(repo, name, in.SHA))
	}
}

func (s *Server) deleteRef(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	name := "refs/" + p["ref"]
	if _, ok := repo.git.refs[name]; !ok {
		writeError(w, http.StatusUnprocessableEntity, "Reference does not exist")
		return
	}
	delete(repo.git.refs, name)
	w.WriteHeader(http.StatusNoContent)
}
