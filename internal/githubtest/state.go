package githubtest

import (
	"fmt"
	"strings"
	"time"
)

// AppSlug is the fake App's slug; it acts on GitHub as BotLogin.
const (
	AppSlug  = "ripcord-githubtest"
	BotLogin = AppSlug + "[bot]"
)

// repoState is everything the fake knows about one repository. All access holds Server.mu.
type repoState struct {
	owner, name   string
	id            int64
	defaultBranch string
	git           *gitObjects

	nextNumber  int // shared by issues and pull requests, as on GitHub
	issues      map[int]*Issue
	pulls       map[int]*pullRequest
	comments    map[int64]*Comment
	reactions   map[int64][]Reaction // by comment id
	permissions map[string]string

	runs        map[int64]*runState
	runNames    map[string]string // workflow file → run-name template (runname.go)
	noDetails   bool              // dispatches answer 204 whatever return_run_details says
	dispatches  []Dispatch
	gateReviews []GateReview

	checkRuns   map[int64]*CheckRun
	checkOrder  []int64
	deployments map[int64]*Deployment
	deployOrder []int64
	statuses    []CommitStatus
}

// repoKey names a repository case-insensitively, as GitHub does.
func repoKey(fullName string) string { return strings.ToLower(fullName) }

// repoLocked returns the repository "owner/name", creating it on first use: every
// repository a test talks about exists, with default branch main.
func (s *Server) repoLocked(fullName string) *repoState {
	key := repoKey(fullName)
	if r, ok := s.repos[key]; ok {
		return r
	}
	owner, name, _ := strings.Cut(fullName, "/")
	r := &repoState{
		owner: owner, name: name, id: s.newIDLocked(), defaultBranch: "main",
		git:         newGitObjects(),
		nextNumber:  1,
		issues:      map[int]*Issue{},
		pulls:       map[int]*pullRequest{},
		comments:    map[int64]*Comment{},
		reactions:   map[int64][]Reaction{},
		permissions: map[string]string{},
		runs:        map[int64]*runState{},
		checkRuns:   map[int64]*CheckRun{},
		deployments: map[int64]*Deployment{},
	}
	s.repos[key] = r
	return r
}

// repoFor is repoLocked for a request's owner and repo parameters.
func (s *Server) repoFor(params map[string]string) *repoState {
	return s.repoLocked(params["owner"] + "/" + params["repo"])
}

func (s *Server) newIDLocked() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) nowLocked() time.Time { return s.clock().UTC().Truncate(time.Second) }

func (r *repoState) fullName() string { return r.owner + "/" + r.name }

// SetDefaultBranch sets the repository's default branch (main unless set).
func (s *Server) SetDefaultBranch(repo, branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repoLocked(repo).defaultBranch = branch
}

func (s *Server) apiURL(format string, args ...any) string {
	return s.URL() + strings.TrimPrefix(fmt.Sprintf(format, args...), "/")
}

func htmlURL(format string, args ...any) string {
	return "https://github.com/" + fmt.Sprintf(format, args...)
}

func (s *Server) userJSON(login string) map[string]any {
	kind := "User"
	if strings.HasSuffix(login, "[bot]") {
		kind = "Bot"
	}
	return map[string]any{
		"login": login, "id": loginID(login), "node_id": "U_" + login, "type": kind,
		"site_admin": false,
		"url":        s.apiURL("users/%s", login),
		"html_url":   htmlURL("%s", login),
		"avatar_url": "https://avatars.githubusercontent.com/u/1",
	}
}

// loginID gives each login a stable id without keeping a table of users.
func loginID(login string) int64 {
	var h int64 = 7
	for _, c := range login {
		h = (h*31 + int64(c)) % 1_000_000_007
	}
	return h
}

func (s *Server) repoJSON(r *repoState) map[string]any {
	return map[string]any{
		"id": r.id, "node_id": fmt.Sprintf("R_%d", r.id), "name": r.name, "full_name": r.fullName(),
		"owner": s.userJSON(r.owner), "private": false, "fork": false,
		"default_branch": r.defaultBranch, "visibility": "public",
		"url":      s.apiURL("repos/%s", r.fullName()),
		"html_url": htmlURL("%s", r.fullName()),
	}
}

func timeJSON(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}
