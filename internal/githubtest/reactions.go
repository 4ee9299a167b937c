package githubtest

import (
	"net/http"
	"strconv"
)

// Comment reactions (the App acknowledges a command with one) and collaborator
// permissions (who may run which command).

func (s *Server) reactionHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions": s.createReaction,
		"GET /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions":  s.listReactions,
		"GET /repos/{owner}/{repo}/collaborators/{username}/permission":     s.getPermission,
	}
}

func (s *Server) createReaction(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct{ Content string }
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, c := s.commentLocked(w, p)
	if c == nil {
		return
	}
	// GitHub answers 200 with the existing reaction when the user already reacted so.
	for _, existing := range repo.reactions[c.ID] {
		if existing.Content == in.Content && existing.User == BotLogin {
			writeJSON(w, http.StatusOK, s.reactionJSON(existing))
			return
		}
	}
	rx := Reaction{ID: s.newIDLocked(), Comment: c.ID, Content: in.Content, User: BotLogin}
	repo.reactions[c.ID] = append(repo.reactions[c.ID], rx)
	writeJSON(w, http.StatusCreated, s.reactionJSON(rx))
}

func (s *Server) listReactions(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, c := s.commentLocked(w, p)
	if c == nil {
		return
	}
	list := []map[string]any{}
	for _, rx := range repo.reactions[c.ID] {
		if content := r.URL.Query().Get("content"); content == "" || content == rx.Content {
			list = append(list, s.reactionJSON(rx))
		}
	}
	writeJSON(w, http.StatusOK, paginate(w, r, list))
}

func (s *Server) reactionJSON(rx Reaction) map[string]any {
	return map[string]any{
		"id": rx.ID, "node_id": "RE_" + strconv.FormatInt(rx.ID, 10), "content": rx.Content,
		"user": s.userJSON(rx.User), "created_at": timeJSON(s.nowLocked()),
	}
}

// Reactions returns the reactions to comment id of repo.
func (s *Server) Reactions(repo string, commentID int64) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.repoLocked(repo).reactions[commentID]...)
}

// SetPermission gives user a role on repo: admin, maintain, write, triage, read or none.
// A user never set has read, as anyone has on a public repository.
func (s *Server) SetPermission(repo, user, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repoLocked(repo).permissions[user] = role
}

func (s *Server) getPermission(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	role, ok := s.repoFor(p).permissions[p["username"]]
	if !ok {
		role = "read"
	}
	// "permission" keeps GitHub's older four levels; "role_name" is the role itself.
	legacy := map[string]string{"maintain": "write", "triage": "read"}[role]
	if legacy == "" {
		legacy = role
	}
	user := s.userJSON(p["username"])
	writeJSON(w, http.StatusOK, map[string]any{"permission": legacy, "role_name": role, "user": user})
}
