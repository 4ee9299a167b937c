package recoveryflow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// commented posts a comment on the pull request, as a person would, and
// delivers its issue_comment event; it returns the comment's id.
func (s *scene) commented(pr int, user, userType, action, body string) int64 {
	s.T.Helper()
	c := s.GitHub.AddComment(repo, pr, user, body)
	s.Deliver("issue_comment", s.IssueComment(e2etest.Comment{Repository: repo, Number: pr, ID: c.ID, User: user,
		UserType: userType, Action: action, Body: body}))
	return c.ID
}

// reply is the App's answer to comment id, "" when there is none.
func (s *scene) reply(id int64) string {
	for _, c := range s.GitHub.Comments(repo) {
		if c.User == githubtest.BotLogin && strings.Contains(c.Body, fmt.Sprintf("ripcord:reply comment-%d ", id)) {
			return c.Body
		}
	}
	return ""
}

func (s *scene) acknowledged(id int64) bool {
	for _, r := range s.GitHub.Reactions(repo, id) {
		if r.Content == "eyes" {
			return true
		}
	}
	return false
}

// /ripcord retry re-runs the latest failed run of a configured workflow on
// the pull request's head; the other comments show who and what is refused
// or ignored.
func TestRetryCommandOnAPullRequest(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL, repoConfig(3, "1ms"), app.Options{})
		head := s.GitHub.PutFile(repo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(repo, "octocat", "feature", "main", "Ship it")
		s.GitHub.AddWorkflowRun(repo, githubtest.WorkflowRun{ID: 6001, Path: ".github/workflows/deploy.yml", HeadSHA: head, Conclusion: "failure"})
		// Newer, failed, but not a workflow .github/ripcord.yml names.
		s.GitHub.AddWorkflowRun(repo, githubtest.WorkflowRun{ID: 6002, Path: ".github/workflows/lint.yml", HeadSHA: head, Conclusion: "failure"})
		s.GitHub.SetPermission(repo, "octocat", "write")
		s.GitHub.SetPermission(repo, "visitor", "read")

		cases := []struct {
			name, user, userType, action, body string
			reply                              string // "" expects no answer at all
		}{
			{"a writer's retry re-runs the deploy run", "octocat", "", "", "Flaky again.\n/ripcord retry\n", "Re-running the failed jobs of run [6001]"},
			{"a reader is refused and told why", "visitor", "", "", "/ripcord retry", "Refused: @visitor has read access; `/ripcord retry` needs write"},
			{"quoted retry in a reply does nothing", "octocat", "", "", "> /ripcord retry\n\nwhy did you do that?", ""},
			{"a retry inside a code block does nothing", "octocat", "", "", "```\n/ripcord retry\n```", ""},
			{"the bot's own comment is ignored", githubtest.BotLogin, "Bot", "", "/ripcord retry", ""},
			{"an edited comment is not run again, and says so", "octocat", "", "edited", "/ripcord retry",
				"ripcord does not run commands from edited comments; post the command as a new comment."},
			{"a typo gets a suggestion", "octocat", "", "", "/ripcord retyr", "Did you mean `/ripcord retry`?"},
			{"approve without a rollout asks which", "octocat", "", "", "/ripcord approve", "Which rollout? Write `/ripcord approve <rollout id>`"},
			{"rollback with nothing to roll back says why", "octocat", "", "", "/ripcord rollback", "Not rolling back:"},
			{"help lists the commands", "visitor", "", "", "/ripcord help", "| `/ripcord retry` |"},
		}
		ids := make([]int64, len(cases))
		for i, c := range cases {
			ids[i] = s.commented(pr, c.user, c.userType, c.action, c.body)
		}
		s.WaitFor("every answer", wait, func() bool {
			for i, c := range cases {
				if c.reply != "" && (s.reply(ids[i]) == "" || !s.acknowledged(ids[i])) {
					return false
				}
			}
			return s.reruns() == 1
		})
		s.Settle(jobKinds...)
		s.logCalls(t)
		for i, c := range cases {
			got := s.reply(ids[i])
			switch {
			case c.reply == "" && (got != "" || s.acknowledged(ids[i])):
				t.Errorf("%s: answered %q (👀 %v), want no answer", c.name, got, s.acknowledged(ids[i]))
			case c.reply != "" && !strings.Contains(got, c.reply):
				t.Errorf("%s: reply %q, want it to contain %q", c.name, got, c.reply)
			}
		}
		if n := s.reruns(); n != 1 {
			t.Errorf("re-runs = %d, want 1", n)
		}
		for _, r := range s.GitHub.Requests() {
			if r.Route == rerunPath && r.Params["run_id"] != "6001" {
				t.Errorf("re-ran run %s, want 6001 (the configured deploy workflow)", r.Params["run_id"])
			}
		}
	})
}
