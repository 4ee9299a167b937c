package commands_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

const repo = "acme/checkout"

// Commands in comments on an issue, through the real server: help and typos
// are answered as on a pull request, and a command that needs a pull
// request says so, rather than leaving the comment without a word. A quoted
// command is still nothing.
func TestCommandsOnAnIssueAreAnswered(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := e2etest.Start(t, dbURL, app.Options{})
		e.Install(repo)
		e.CheckRequestsAtCleanup(t)
		issue := openIssue(t, e, "checkout is slow")

		cases := []struct {
			name, body string
			reply      string // "" expects no answer at all
		}{
			{"retry needs a pull request", "/ripcord retry", "`/ripcord retry` works in pull request comments only, not on issues"},
			{"help lists the commands", "/ripcord help", "| `/ripcord retry` |"},
			{"help says which work here", "/ripcord help", "in pull request and issue comments, one per comment, at the start of a line; " +
				"`/ripcord retry` works in pull request comments only:"},
			{"a typo gets a suggestion", "/ripcord rollbak", "Did you mean `/ripcord rollback`?"},
			{"a quoted command does nothing", "> /ripcord retry\n\nwhat does this do?", ""},
		}
		ids := make([]int64, len(cases))
		for i, c := range cases {
			ids[i] = comment(t, e, issue, "octocat", c.body)
		}
		e.WaitFor("every answer", 15*time.Second, func() bool {
			for i, c := range cases {
				if c.reply != "" && (reply(e, ids[i]) == "" || !acknowledged(e, ids[i])) {
					return false
				}
			}
			return true
		})
		e.Settle("comment_reaction", "comment_reply")
		for i, c := range cases {
			got := reply(e, ids[i])
			switch {
			case c.reply == "" && (got != "" || acknowledged(e, ids[i])):
				t.Errorf("%s: answered %q (👀 %v), want no answer", c.name, got, acknowledged(e, ids[i]))
			case c.reply != "" && !strings.Contains(got, c.reply):
				t.Errorf("%s: reply %q, want it to contain %q", c.name, got, c.reply)
			}
		}
		if n := e.GitHub.Count("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"); n != 0 {
			t.Errorf("a retry on an issue re-ran %d runs", n)
		}
	})
}

// comment posts body on issue as user and delivers its issue_comment event,
// without the pull_request an issue does not have.
func comment(t *testing.T, e *e2etest.Env, issue int, user, body string) int64 {
	t.Helper()
	c := e.GitHub.AddComment(repo, issue, user, body)
	payload := e.IssueComment(e2etest.Comment{Repository: repo, Number: issue, ID: c.ID, User: user, Body: body})
	payload = e2etest.Edit(t, payload, func(m map[string]any) { delete(m["issue"].(map[string]any), "pull_request") })
	e.Deliver("issue_comment", payload)
	return c.ID
}

// openIssue opens an issue on the fake GitHub through its REST API.
func openIssue(t *testing.T, e *e2etest.Env, title string) int {
	t.Helper()
	resp, err := http.Post(e.GitHub.URL()+"repos/"+repo+"/issues", "application/json", strings.NewReader(`{"title":"`+title+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var is struct{ Number int }
	if err := json.NewDecoder(resp.Body).Decode(&is); err != nil || is.Number == 0 {
		t.Fatalf("open issue: %d %v", resp.StatusCode, err)
	}
	return is.Number
}

// reply is the App's answer to comment id, "" when there is none.
func reply(e *e2etest.Env, id int64) string {
	for _, c := range e.GitHub.Comments(repo) {
		if c.User == githubtest.BotLogin && strings.Contains(c.Body, fmt.Sprintf("ripcord:reply comment-%d ", id)) {
			return c.Body
		}
	}
	return ""
}

func acknowledged(e *e2etest.Env, id int64) bool {
	for _, r := range e.GitHub.Reactions(repo, id) {
		if r.Content == "eyes" {
			return true
		}
	}
	return false
}
