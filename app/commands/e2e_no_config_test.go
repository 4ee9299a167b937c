package commands_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A command in a repository without .github/ripcord.yml, its organisation's
// .github repository without one either, is answered with where the file is
// missing: the repository the comment is in first, then the organisation's
// .github repository ripcord looked at next. Naming the organisation's
// repository as the one without a config would send people to the wrong
// repository.
func TestACommandWithoutAConfigNamesTheRepositoryToAddItTo(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := e2etest.Start(t, dbURL, app.Options{})
		e.Install(repo)
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", "README.md", "checkout")
		e.GitHub.PutFile(repo, "feature", "app.txt", "change")
		pr := e.GitHub.OpenPullRequest(repo, "octocat", "feature", "main", "Ship it")
		c := e.GitHub.AddComment(repo, pr, "octocat", "/ripcord rollback the canary is failing")
		e.Deliver("issue_comment", e.IssueComment(e2etest.Comment{Repository: repo, Number: pr, ID: c.ID, User: "octocat", Body: c.Body}))

		e.WaitFor("the answer", 15*time.Second, func() bool { return reply(e, c.ID) != "" })
		const want = "ripcord cannot run `/ripcord rollback` here: " +
			"no .github/ripcord.yml in acme/checkout, nor in its organisation's acme/.github repository: add one to acme/checkout"
		if got := reply(e, c.ID); !strings.Contains(got, want) {
			t.Errorf("reply %q, want it to contain %q", got, want)
		}
		e.Settle("comment_reaction", "comment_reply")
	})
}
