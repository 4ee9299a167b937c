package githubtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Issue is an issue or, with PullRequest set, the issue side of a pull request (GitHub
// numbers both from one sequence and serves a pull request's comments and labels through
// the issues API).
type Issue struct {
	Number      int
	ID          int64
	Title, Body string
	State       string // open, closed
	Labels      []string
	User        string
	PullRequest bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Comment is an issue or pull-request comment.
type Comment struct {
	ID        int64
	Issue     int // the issue or pull request number
	Body      string
	User      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (s *Server) issueHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"POST /repos/{owner}/{repo}/issues":                                s.createIssue,
		"GET /repos/{owner}/{repo}/issues":                                 s.listIssues,
		"GET /repos/{owner}/{repo}/issues/{issue_number}":                  s.getIssue,
		"PATCH /repos/{owner}/{repo}/issues/{issue_number}":                s.updateIssue,
		"POST /repos/{owner}/{repo}/issues/{issue_number}/comments":        s.createComment,
		"GET /repos/{owner}/{repo}/issues/{issue_number}/comments":         s.listComments,
		"GET /repos/{owner}/{repo}/issues/comments/{comment_id}":           s.getComment,
		"PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}":         s.updateComment,
		"DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}":        s.deleteComment,
		"POST /repos/{owner}/{repo}/issues/{issue_number}/labels":          s.addLabels,
		"GET /repos/{owner}/{repo}/issues/{issue_number}/labels":           s.listLabels,
		"DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}": s.removeLabel,
	}
}

// newIssueLocked takes the next number of the repository's shared sequence.
func (s *Server) newIssueLocked(repo *repoState, title, body, user string, pull bool) *Issue {
	now := s.nowLocked()
	is := &Issue{
		Number: repo.nextNumber, ID: s.newIDLocked(), Title: title, Body: body, State: "open",
		User: user, PullRequest: pull, CreatedAt: now, UpdatedAt: now,
	}
	repo.nextNumber++
	repo.issues[is.Number] = is
	return is
}

func (s *Server) createIssue(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		Title  any             `json:"title"`
		Body   string          `json:"body"`
		Labels json.RawMessage `json:"labels"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	title, ok := in.Title.(string)
	if !ok {
		title = strconv.FormatFloat(toFloat(in.Title), 'f', -1, 64)
	}
	is := s.newIssueLocked(repo, title, in.Body, BotLogin, false)
	is.Labels = mergeLabels(nil, labelNames(in.Labels))
	writeJSON(w, http.StatusCreated, s.issueJSON(repo, is))
}

func toFloat(v any) float64 {
	f, _ := v.(float64)
	return f
}

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, p map[string]string) {
	q := r.URL.Query()
	state := orDefault(q.Get("state"), "open")
	var wanted []string
	if l := q.Get("labels"); l != "" {
		wanted = strings.Split(l, ",")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	var list []map[string]any
	for _, is := range sortedIssues(repo, q.Get("direction") == "asc") {
		if (state != "all" && is.State != state) || (q.Get("creator") != "" && is.User != q.Get("creator")) {
			continue
		}
		if !containsAll(is.Labels, wanted) {
			continue
		}
		list = append(list, s.issueJSON(repo, is))
	}
	writeJSON(w, http.StatusOK, paginate(w, r, nonNil(list)))
}

func sortedIssues(repo *repoState, ascending bool) []*Issue {
	var list []*Issue
	for _, is := range repo.issues {
		list = append(list, is)
	}
	sort.Slice(list, func(i, j int) bool {
		if ascending {
			return list[i].Number < list[j].Number
		}
		return list[i].Number > list[j].Number
	})
	return list
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, strings.TrimSpace(w)) }) {
			return false
		}
	}
	return true
}

func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

func (s *Server) issueLocked(w http.ResponseWriter, p map[string]string) (*repoState, *Issue) {
	repo := s.repoFor(p)
	n, _ := strconv.Atoi(p["issue_number"])
	is, ok := repo.issues[n]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return repo, nil
	}
	return repo, is
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if repo, is := s.issueLocked(w, p); is != nil {
		writeJSON(w, http.StatusOK, s.issueJSON(repo, is))
	}
}

func (s *Server) updateIssue(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		Title  *string         `json:"title"`
		Body   *string         `json:"body"`
		State  *string         `json:"state"`
		Labels json.RawMessage `json:"labels"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, is := s.issueLocked(w, p)
	if is == nil {
		return
	}
	setIf(&is.Title, in.Title)
	setIf(&is.Body, in.Body)
	setIf(&is.State, in.State)
	if in.Labels != nil {
		is.Labels = mergeLabels(nil, labelNames(in.Labels))
	}
	is.UpdatedAt = s.nowLocked()
	writeJSON(w, http.StatusOK, s.issueJSON(repo, is))
}

func setIf(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

func (s *Server) issueJSON(repo *repoState, is *Issue) map[string]any {
	out := map[string]any{
		"id": is.ID, "node_id": "I_" + strconv.FormatInt(is.ID, 10), "number": is.Number,
		"title": is.Title, "body": is.Body, "state": is.State, "user": s.userJSON(is.User),
		"labels": s.labelsJSON(repo, is.Labels), "locked": false, "comments": countComments(repo, is.Number),
		"url":        s.apiURL("repos/%s/issues/%d", repo.fullName(), is.Number),
		"html_url":   htmlURL("%s/issues/%d", repo.fullName(), is.Number),
		"created_at": timeJSON(is.CreatedAt), "updated_at": timeJSON(is.UpdatedAt), "closed_at": nil,
		"assignees": []any{}, "author_association": "NONE",
	}
	if is.PullRequest {
		out["html_url"] = htmlURL("%s/pull/%d", repo.fullName(), is.Number)
		out["pull_request"] = map[string]any{
			"url":      s.apiURL("repos/%s/pulls/%d", repo.fullName(), is.Number),
			"html_url": htmlURL("%s/pull/%d", repo.fullName(), is.Number),
		}
	}
	return out
}

func countComments(repo *repoState, number int) int {
	n := 0
	for _, c := range repo.comments {
		if c.Issue == number {
			n++
		}
	}
	return n
}

// Issues returns repo's issues and pull requests (as issues), by number.
func (s *Server) Issues(repo string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	for _, is := range sortedIssues(s.repoLocked(repo), true) {
		c := *is
		c.Labels = append([]string(nil), is.Labels...)
		out = append(out, c)
	}
	return out
}
