package commands_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

const editedReply = "ripcord does not run commands from edited comments; post the command as a new comment."

// Someone who fixes a typo in a command by editing the comment is told
// that an edit runs nothing, once per comment: a second edit, or an edit
// of a comment answered already, posts no second reply. An edit without
// a command line (or with a quoted one) gets no answer.
func TestEditedCommandsAreAnsweredOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := e2etest.Start(t, dbURL, app.Options{})
		e.Install(repo)
		e.CheckRequestsAtCleanup(t)
		issue := openIssue(t, e, "checkout is slow")

		fixed := e.GitHub.AddComment(repo, issue, "octocat", "/ripcord rollbak").ID
		edit(t, e, issue, fixed, "/ripcord rollback")
		edit(t, e, issue, fixed, "/ripcord rollback because checkout is slow")
		quoted := e.GitHub.AddComment(repo, issue, "octocat", "see above").ID
		edit(t, e, issue, quoted, "> /ripcord rollback\n\nwhat does this do?")
		prose := e.GitHub.AddComment(repo, issue, "octocat", "checkout is slwo").ID
		edit(t, e, issue, prose, "checkout is slow")
		typo := comment(t, e, issue, "octocat", "/ripcord rollbak")
		edit(t, e, issue, typo, "/ripcord rollback")

		e.WaitFor("the answers", 15*time.Second, func() bool {
			return replies(e, fixed) == 1 && acknowledged(e, fixed) && replies(e, typo) == 1
		})
		e.Settle("comment_reaction", "comment_reply")
		if got := reply(e, fixed); !strings.Contains(got, "@octocat "+editedReply) || replies(e, fixed) != 1 {
			t.Errorf("a command written by two edits: %d replies, %q; want one saying %q", replies(e, fixed), got, editedReply)
		}
		if got := reply(e, typo); !strings.Contains(got, "Did you mean `/ripcord rollback`?") || replies(e, typo) != 1 {
			t.Errorf("an edit of a comment answered already: %d replies, %q; want only the first answer", replies(e, typo), got)
		}
		for name, id := range map[string]int64{"an edit with a quoted command": quoted, "an edit without a command": prose} {
			if got := reply(e, id); got != "" || acknowledged(e, id) {
				t.Errorf("%s: answered %q (👀 %v), want no answer", name, got, acknowledged(e, id))
			}
		}
		if n := e.Int(`SELECT COUNT(*) FROM audit_events WHERE type IN ('command_received', 'command_refused')`); n != 0 {
			t.Errorf("%d commands received or refused after edits, want none: an edit runs nothing", n)
		}
	})
}

// edit delivers the issue_comment event of comment id on issue edited to body.
func edit(t *testing.T, e *e2etest.Env, issue int, id int64, body string) {
	t.Helper()
	payload := e.IssueComment(e2etest.Comment{Repository: repo, Number: issue, ID: id, User: "octocat", Action: "edited", Body: body})
	payload = e2etest.Edit(t, payload, func(m map[string]any) { delete(m["issue"].(map[string]any), "pull_request") })
	e.Deliver("issue_comment", payload)
}

// replies counts the App's answers to comment id.
func replies(e *e2etest.Env, id int64) int {
	n := 0
	for _, c := range e.GitHub.Comments(repo) {
		if c.User == githubtest.BotLogin && strings.Contains(c.Body, fmt.Sprintf("ripcord:reply comment-%d ", id)) {
			n++
		}
	}
	return n
}
