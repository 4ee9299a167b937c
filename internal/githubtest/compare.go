package githubtest

import (
	"net/http"
	"strings"
)

// Comparing two commits: what head has that base does not, as `git log base..head`
// lists it, oldest first, with the merge base and how far each side is ahead.

// compareLimit is how many commits GitHub lists without paging parameters: the newest.
const compareLimit = 250

func (s *Server) compareHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"GET /repos/{owner}/{repo}/compare/{basehead}": s.compareCommits,
	}
}

func (s *Server) compareCommits(w http.ResponseWriter, r *http.Request, p map[string]string) {
	baseRef, headRef, ok := strings.Cut(p["basehead"], "...")
	if !ok || baseRef == "" || headRef == "" {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	base, okBase := repo.git.resolve(baseRef)
	head, okHead := repo.git.resolve(headRef)
	if !okBase || !okHead {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	ofBase, ofHead := repo.git.reachable(base), repo.git.reachable(head)
	ahead := repo.git.oldestFirst(head, ofBase)
	behind := repo.git.oldestFirst(base, ofHead)
	list := make([]map[string]any, 0, len(ahead))
	for _, sha := range ahead {
		list = append(list, s.repoCommitJSON(repo, repo.git.commits[sha]))
	}
	q := r.URL.Query()
	if q.Has("page") || q.Has("per_page") {
		list = paginate(w, r, list)
	} else if len(list) > compareLimit {
		list = list[len(list)-compareLimit:]
	}
	status := "diverged"
	switch {
	case len(ahead) == 0 && len(behind) == 0:
		status = "identical"
	case len(behind) == 0:
		status = "ahead"
	case len(ahead) == 0:
		status = "behind"
	}
	name := repo.fullName()
	var mergeBase any
	if mb, ok := repo.git.mergeBase(head, ofBase); ok {
		mergeBase = s.repoCommitJSON(repo, repo.git.commits[mb])
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"url":               s.apiURL("repos/%s/compare/%s...%s", name, baseRef, headRef),
		"html_url":          htmlURL("%s/compare/%s...%s", name, baseRef, headRef),
		"permalink_url":     htmlURL("%s/compare/%s...%s", name, base, head),
		"diff_url":          htmlURL("%s/compare/%s...%s.diff", name, baseRef, headRef),
		"patch_url":         htmlURL("%s/compare/%s...%s.patch", name, baseRef, headRef),
		"base_commit":       s.repoCommitJSON(repo, repo.git.commits[base]),
		"merge_base_commit": mergeBase,
		"status":            status, "ahead_by": len(ahead), "behind_by": len(behind), "total_commits": len(ahead),
		"commits": list, "files": []any{},
	})
}

// reachable is every commit reachable from sha through parents, sha included.
func (g *gitObjects) reachable(sha string) map[string]bool {
	seen := map[string]bool{}
	for _, c := range g.breadthFirst(sha) {
		seen[c] = true
	}
	return seen
}

// breadthFirst lists head and the commits reachable from it, nearest first, each once.
func (g *gitObjects) breadthFirst(head string) []string {
	var out []string
	seen := map[string]bool{}
	for queue := []string{head}; len(queue) > 0; queue = queue[1:] {
		if sha := queue[0]; !seen[sha] {
			seen[sha] = true
			out = append(out, sha)
			if c, ok := g.commits[sha]; ok {
				queue = append(queue, c.Parents...)
			}
		}
	}
	return out
}

// oldestFirst lists the commits reachable from head but not in except, every commit after
// its parents.
func (g *gitObjects) oldestFirst(head string, except map[string]bool) []string {
	var out []string
	done := map[string]bool{}
	var visit func(sha string)
	visit = func(sha string) {
		if done[sha] || except[sha] {
			return
		}
		done[sha] = true
		if c, ok := g.commits[sha]; ok {
			for _, parent := range c.Parents {
				visit(parent)
			}
		}
		out = append(out, sha)
	}
	visit(head)
	return out
}

// mergeBase is the first commit reachable from head, breadth first, that ofBase holds.
func (g *gitObjects) mergeBase(head string, ofBase map[string]bool) (string, bool) {
	for _, sha := range g.breadthFirst(head) {
		if ofBase[sha] {
			return sha, true
		}
	}
	return "", false
}
