package e2etest

import (
	"strings"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
)

// Run describes a workflow_run completed delivery.
type Run struct {
	Repository string
	ID         int64
	Attempt    int
	Conclusion string // failure, timed_out, success, cancelled
	Path       string // default .github/workflows/deploy.yml
	HeadSHA    string
	CreatedAt  time.Time // default now
	Event      string    // default push; workflow_dispatch for a dispatched run
}

func name(repository string) string {
	_, n, _ := strings.Cut(repository, "/")
	return n
}

func owner(repository string) string {
	o, _, _ := strings.Cut(repository, "/")
	return o
}

// WorkflowRun is GitHub's workflow_run completed example payload with the
// run's id, attempt, conclusion, workflow path, commit, times and
// repository replaced, and the installation an App delivery carries.
func (e *Env) WorkflowRun(r Run) []byte {
	if r.Path == "" {
		r.Path = ".github/workflows/deploy.yml"
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now().UTC()
	}
	return Edit(e.T, githubtest.LoadPayload(e.T, "workflow_run", "completed.payload.json"), func(m map[string]any) {
		m["action"] = "completed"
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		setRepo(m["repository"].(map[string]any), r.Repository)
		m["workflow"].(map[string]any)["path"] = r.Path
		wr := m["workflow_run"].(map[string]any)
		wr["id"], wr["run_attempt"], wr["status"], wr["conclusion"] = r.ID, r.Attempt, "completed", r.Conclusion
		if r.Event == "" {
			r.Event = "push"
		}
		wr["path"], wr["head_sha"], wr["event"], wr["head_branch"] = r.Path, r.HeadSHA, r.Event, "main"
		stamp := r.CreatedAt.Format(time.RFC3339)
		wr["created_at"], wr["run_started_at"], wr["updated_at"] = stamp, stamp, time.Now().UTC().Format(time.RFC3339)
		for _, k := range []string{"repository", "head_repository"} {
			if rm, ok := wr[k].(map[string]any); ok {
				setRepo(rm, r.Repository)
			}
		}
	})
}

func setRepo(m map[string]any, repository string) {
	m["full_name"], m["name"] = repository, name(repository)
	if o, ok := m["owner"].(map[string]any); ok {
		o["login"] = owner(repository)
	}
}

// Comment describes an issue_comment created delivery on a pull request.
type Comment struct {
	Repository string
	Number     int
	ID         int64
	User       string
	UserType   string // default User
	Body       string
	Action     string // default created
}

// IssueComment is GitHub's issue_comment example payload for c.
func (e *Env) IssueComment(c Comment) []byte {
	if c.UserType == "" {
		c.UserType = "User"
	}
	if c.Action == "" {
		c.Action = "created"
	}
	return Edit(e.T, githubtest.LoadPayload(e.T, "issue_comment", "created.with-installation.payload.json"), func(m map[string]any) {
		m["action"] = c.Action
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		setRepo(m["repository"].(map[string]any), c.Repository)
		is := m["issue"].(map[string]any)
		is["number"] = c.Number
		is["pull_request"] = map[string]any{"url": e.GitHub.URL() + "repos/" + c.Repository + "/pulls/" + itoa(c.Number)}
		cm := m["comment"].(map[string]any)
		cm["id"], cm["body"] = c.ID, c.Body
		u := cm["user"].(map[string]any)
		u["login"], u["type"] = c.User, c.UserType
	})
}

// Push is GitHub's push example payload for a push of one commit, sha, to
// main of repository that added or modified the given files.
func (e *Env) Push(repository, sha string, modified ...string) []byte {
	return Edit(e.T, githubtest.LoadPayload(e.T, "push", "payload.json"), func(m map[string]any) {
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
		m["after"], m["deleted"], m["ref"] = sha, false, "refs/heads/main"
		setRepo(m["repository"].(map[string]any), repository)
		files := make([]any, len(modified))
		for i, f := range modified {
			files[i] = f
		}
		m["commits"] = []any{map[string]any{"id": sha, "message": "change", "added": []any{}, "removed": []any{}, "modified": files,
			"timestamp": time.Now().UTC().Format(time.RFC3339), "url": "https://github.com/" + repository + "/commit/" + sha,
			"distinct": true, "tree_id": sha, "author": map[string]any{"name": "octocat", "email": "octocat@example.com"},
			"committer": map[string]any{"name": "octocat", "email": "octocat@example.com"}}}
	})
}
