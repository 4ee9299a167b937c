package githubtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Issue comments, labels and comment reactions.

// Reaction is an emoji reaction to an issue comment.
type Reaction struct {
	ID      int64
	Comment int64
	Content string // +1, -1, laugh, confused, heart, hooray, rocket, eyes
	User    string
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct{ Body string }
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
	c := s.addCommentLocked(repo, is.Number, BotLogin, in.Body)
	writeJSON(w, http.StatusCreated, s.commentJSON(repo, c))
}

func (s *Server) addCommentLocked(repo *repoState, number int, user, body string) *Comment {
	now := s.nowLocked()
	c := &Comment{ID: s.newIDLocked(), Issue: number, Body: body, User: user, CreatedAt: now, UpdatedAt: now}
	repo.comments[c.ID] = c
	return c
}

// AddComment makes user comment body on issue or pull request number of repo, as a
// person would on GitHub (the test then sends the issue_comment delivery). It returns
// the comment, whose ID the delivery should carry.
func (s *Server) AddComment(repo string, number int, user, body string) Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.addCommentLocked(s.repoLocked(repo), number, user, body)
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, is := s.issueLocked(w, p)
	if is == nil {
		return
	}
	var list []map[string]any
	for _, c := range sortedComments(repo) {
		if c.Issue == is.Number {
			list = append(list, s.commentJSON(repo, c))
		}
	}
	writeJSON(w, http.StatusOK, paginate(w, r, nonNil(list)))
}

func sortedComments(repo *repoState) []*Comment {
	var list []*Comment
	for _, c := range repo.comments {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list
}

func (s *Server) commentLocked(w http.ResponseWriter, p map[string]string) (*repoState, *Comment) {
	repo := s.repoFor(p)
	c, ok := repo.comments[atoi64(p["comment_id"])]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return repo, nil
	}
	return repo, c
}

func (s *Server) getComment(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if repo, c := s.commentLocked(w, p); c != nil {
		writeJSON(w, http.StatusOK, s.commentJSON(repo, c))
	}
}

func (s *Server) updateComment(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct{ Body string }
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if repo, c := s.commentLocked(w, p); c != nil {
		c.Body, c.UpdatedAt = in.Body, s.nowLocked()
		writeJSON(w, http.StatusOK, s.commentJSON(repo, c))
	}
}

func (s *Server) deleteComment(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if repo, c := s.commentLocked(w, p); c != nil {
		delete(repo.comments, c.ID)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) commentJSON(repo *repoState, c *Comment) map[string]any {
	return map[string]any{
		"id": c.ID, "node_id": "IC_" + strconv.FormatInt(c.ID, 10), "body": c.Body, "user": s.userJSON(c.User),
		"url":        s.apiURL("repos/%s/issues/comments/%d", repo.fullName(), c.ID),
		"html_url":   htmlURL("%s/issues/%d#issuecomment-%d", repo.fullName(), c.Issue, c.ID),
		"issue_url":  s.apiURL("repos/%s/issues/%d", repo.fullName(), c.Issue),
		"created_at": timeJSON(c.CreatedAt), "updated_at": timeJSON(c.UpdatedAt),
		"author_association": "NONE",
	}
}

// Comments returns repo's comments in the order they were made.
func (s *Server) Comments(repo string) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range sortedComments(s.repoLocked(repo)) {
		out = append(out, *c)
	}
	return out
}

// labelNames reads a labels value: ["a"], [{"name": "a"}] or {"labels": [...]}.
func labelNames(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var wrapped struct {
		Labels json.RawMessage `json:"labels"`
	}
	if json.Unmarshal(raw, &wrapped) == nil && wrapped.Labels != nil {
		return labelNames(wrapped.Labels)
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			return []string{one}
		}
		return nil
	}
	var names []string
	for _, item := range items {
		var name string
		var obj struct{ Name string }
		switch {
		case json.Unmarshal(item, &name) == nil:
			names = append(names, name)
		case json.Unmarshal(item, &obj) == nil:
			names = append(names, obj.Name)
		}
	}
	return names
}

func mergeLabels(have, add []string) []string {
	out := append([]string(nil), have...)
	for _, name := range add {
		if !slices.ContainsFunc(out, func(h string) bool { return strings.EqualFold(h, name) }) {
			out = append(out, name)
		}
	}
	return out
}

func (s *Server) labelsJSON(repo *repoState, names []string) []map[string]any {
	out := []map[string]any{}
	for _, name := range names {
		out = append(out, map[string]any{
			"id": loginID("label:" + name), "node_id": "LA_" + name, "name": name, "color": "ededed",
			"default": false, "description": nil,
			"url": s.apiURL("repos/%s/labels/%s", repo.fullName(), name),
		})
	}
	return out
}

func (s *Server) addLabels(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var raw json.RawMessage
	if err := decodeBody(r, &raw); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, is := s.issueLocked(w, p)
	if is == nil {
		return
	}
	is.Labels = mergeLabels(is.Labels, labelNames(raw))
	writeJSON(w, http.StatusOK, s.labelsJSON(repo, is.Labels))
}

func (s *Server) listLabels(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if repo, is := s.issueLocked(w, p); is != nil {
		writeJSON(w, http.StatusOK, paginate(w, r, s.labelsJSON(repo, is.Labels)))
	}
}

func (s *Server) removeLabel(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, is := s.issueLocked(w, p)
	if is == nil {
		return
	}
	i := slices.IndexFunc(is.Labels, func(h string) bool { return strings.EqualFold(h, p["name"]) })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Label does not exist")
		return
	}
	is.Labels = slices.Delete(is.Labels, i, i+1)
	writeJSON(w, http.StatusOK, s.labelsJSON(repo, is.Labels))
}
