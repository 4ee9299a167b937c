package githubtest

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// PullRequest is a pull request in the fake, with its issue-side fields.
type PullRequest struct {
	Number      int
	ID          int64
	Title, Body string
	State       string // open, closed
	Head, Base  string // branch names
	Draft       bool
	Labels      []string
	User        string
	CreatedAt   time.Time
}

type pullRequest struct {
	number     int
	head, base string
	draft      bool
}

func (s *Server) pullHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"GET /repos/{owner}/{repo}/pulls":                      s.listPulls,
		"POST /repos/{owner}/{repo}/pulls":                     s.createPull,
		"GET /repos/{owner}/{repo}/pulls/{pull_number}":        s.getPull,
		"PATCH /repos/{owner}/{repo}/pulls/{pull_number}":      s.updatePull,
		"GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls": s.pullsForCommit,
	}
}

// headBranch reads a head filter or field, "owner:branch" or "branch".
func headBranch(head string) string {
	if _, branch, ok := strings.Cut(head, ":"); ok {
		return branch
	}
	return head
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		Title, Body, Head, Base string
		Draft                   bool
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	head := headBranch(in.Head)
	switch {
	case repo.git.refs[fullRef(in.Base)] == "":
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed: base "+in.Base+" is not a branch")
		return
	case repo.git.refs[fullRef(head)] == "":
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed: head "+in.Head+" is not a branch")
		return
	}
	for _, pr := range repo.pulls {
		if pr.head == head && pr.base == in.Base && repo.issues[pr.number].State == "open" {
			writeError(w, http.StatusUnprocessableEntity, "Validation Failed: A pull request already exists for "+repo.owner+":"+head+".")
			return
		}
	}
	is := s.newIssueLocked(repo, in.Title, in.Body, BotLogin, true)
	pr := &pullRequest{number: is.Number, head: head, base: in.Base, draft: in.Draft}
	repo.pulls[is.Number] = pr
	writeJSON(w, http.StatusCreated, s.pullJSON(repo, pr))
}

// OpenPullRequest opens a pull request from head to base as user, as a person would; the
// branches need not exist. It returns the pull request's number.
func (s *Server) OpenPullRequest(repo, user, head, base, title string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repoLocked(repo)
	is := s.newIssueLocked(rs, title, "", user, true)
	rs.pulls[is.Number] = &pullRequest{number: is.Number, head: headBranch(head), base: base}
	return is.Number
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request, p map[string]string) {
	q := r.URL.Query()
	state := orDefault(q.Get("state"), "open")
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	var list []map[string]any
	for _, pr := range sortedPulls(repo, q.Get("direction") == "asc") {
		is := repo.issues[pr.number]
		if state != "all" && is.State != state {
			continue
		}
		if h := q.Get("head"); h != "" && headBranch(h) != pr.head {
			continue
		}
		if b := q.Get("base"); b != "" && b != pr.base {
			continue
		}
		list = append(list, s.pullJSON(repo, pr))
	}
	writeJSON(w, http.StatusOK, paginate(w, r, nonNil(list)))
}

func sortedPulls(repo *repoState, ascending bool) []*pullRequest {
	var list []*pullRequest
	for _, pr := range repo.pulls {
		list = append(list, pr)
	}
	sort.Slice(list, func(i, j int) bool {
		if ascending {
			return list[i].number < list[j].number
		}
		return list[i].number > list[j].number
	})
	return list
}

func (s *Server) pullLocked(w http.ResponseWriter, p map[string]string) (*repoState, *pullRequest) {
	repo := s.repoFor(p)
	n, _ := strconv.Atoi(p["pull_number"])
	pr, ok := repo.pulls[n]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return repo, nil
	}
	return repo, pr
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if repo, pr := s.pullLocked(w, p); pr != nil {
		writeJSON(w, http.StatusOK, s.pullJSON(repo, pr))
	}
}

func (s *Server) updatePull(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		Title, Body, State, Base *string
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, pr := s.pullLocked(w, p)
	if pr == nil {
		return
	}
	is := repo.issues[pr.number]
	setIf(&is.Title, in.Title)
	setIf(&is.Body, in.Body)
	setIf(&is.State, in.State)
	setIf(&pr.base, in.Base)
	is.UpdatedAt = s.nowLocked()
	writeJSON(w, http.StatusOK, s.pullJSON(repo, pr))
}

func (s *Server) pullsForCommit(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	var list []map[string]any
	for _, pr := range sortedPulls(repo, false) {
		if repo.git.refs[fullRef(pr.head)] == p["commit_sha"] {
			list = append(list, s.pullJSON(repo, pr))
		}
	}
	writeJSON(w, http.StatusOK, paginate(w, r, nonNil(list)))
}

func (s *Server) pullJSON(repo *repoState, pr *pullRequest) map[string]any {
	is := repo.issues[pr.number]
	side := func(branch string) map[string]any {
		return map[string]any{
			"label": repo.owner + ":" + branch, "ref": branch, "sha": repo.git.refs[fullRef(branch)],
			"repo": s.repoJSON(repo), "user": s.userJSON(repo.owner),
		}
	}
	return map[string]any{
		"id": is.ID, "node_id": "PR_" + strconv.FormatInt(is.ID, 10), "number": pr.number,
		"state": is.State, "title": is.Title, "body": is.Body, "user": s.userJSON(is.User),
		"labels": s.labelsJSON(repo, is.Labels), "draft": pr.draft, "locked": false,
		"merged": false, "mergeable": nil, "merged_at": nil, "closed_at": nil,
		"head": side(pr.head), "base": side(pr.base),
		"url":        s.apiURL("repos/%s/pulls/%d", repo.fullName(), pr.number),
		"issue_url":  s.apiURL("repos/%s/issues/%d", repo.fullName(), pr.number),
		"html_url":   htmlURL("%s/pull/%d", repo.fullName(), pr.number),
		"created_at": timeJSON(is.CreatedAt), "updated_at": timeJSON(is.UpdatedAt),
		"author_association": "NONE",
	}
}

// PullRequests returns repo's pull requests by number.
func (s *Server) PullRequests(repo string) []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repoLocked(repo)
	var out []PullRequest
	for _, pr := range sortedPulls(rs, true) {
		is := rs.issues[pr.number]
		out = append(out, PullRequest{
			Number: pr.number, ID: is.ID, Title: is.Title, Body: is.Body, State: is.State,
			Head: pr.head, Base: pr.base, Draft: pr.draft, Labels: append([]string(nil), is.Labels...),
			User: is.User, CreatedAt: is.CreatedAt,
		})
	}
	return out
}
