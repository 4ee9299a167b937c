package rollbackflow_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A rollback asked for where .github/ripcord.yml does not load is refused
// with one sentence naming the repository, the file (with its line when
// known) and what to do, the same whether the person clicked Roll back,
// commented `/ripcord rollback` or called POST /api/v1/rollbacks (as
// `ripcord rollback` does): for a repository with no file, for a file
// whose YAML does not parse, and for a file with an unknown key.
func TestARollbackWhereTheConfigDoesNotLoadSaysWhatToFix(t *testing.T) {
	t.Parallel()
	const other = "acme/other" // installed, no config, nor an organisation one
	unknownKey := strings.Replace(repoConfig, "          base: main\n", "          base: main\n          bogus: 1\n", 1)
	cases := []struct {
		name, repo, config string
		says, field        string
	}{
		{"no file", other, "",
			"no .github/ripcord.yml in acme/other, nor in its organisation's acme/.github repository: " +
				"add one to acme/other that configures the app's environments", ".github/ripcord.yml"},
		{"a YAML syntax error", appRepo, "version: 1\napps:\n  checkout: [\n",
			".github/ripcord.yml of acme/checkout is not valid YAML at line 3 (did not find expected node content): fix it, then try again", ".github/ripcord.yml:3"},
		{"an unknown key", appRepo, unknownKey,
			`.github/ripcord.yml of acme/checkout is not valid at line 12, apps.checkout.environments.prod.rollback.bogus: unknown key "bogus"`, "apps.checkout.environments.prod.rollback.bogus"},
	}
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		s.Install(other)
		failed := "r3:prod-eu/prod"
		s.WaitFor("r3's check run with its button", wait, func() bool {
			cr, ok := s.releaseCheck(failed)
			return ok && cr.Status == "completed" && len(cr.Actions) == 1
		})
		for _, c := range cases {
			if c.config != "" {
				s.GitHub.PutFile(c.repo, "main", ".github/ripcord.yml", c.config)
			}
			s.GitHub.SetPermission(c.repo, "octocat", "write")

			status, out := s.Do("POST", "/api/v1/rollbacks", "application/json", []byte(fmt.Sprintf(
				`{"app":"checkout","environment":"prod","reason":"errors up","repository":%q}`, c.repo)))
			var answer struct{ Error, Field string }
			_ = json.Unmarshal(out, &answer)
			if status != http.StatusUnprocessableEntity || !strings.HasPrefix(answer.Error, c.says) || answer.Field != c.field {
				t.Errorf("%s: POST /api/v1/rollbacks answered %d %s, want 422 on %s saying %q", c.name, status, out, c.field, c.says)
			}

			// A click counts only in the release's own repository (one
			// delivered from another is ignored), so only there can the
			// button meet a config that does not load.
			if c.repo == appRepo {
				s.Deliver("check_run", s.clickBody(failed, "octocat"))
				want := "Not rolling back: " + c.says
				s.WaitFor(c.name+": the button's answer", wait, func() bool {
					cr, _ := s.releaseCheck(failed)
					return strings.Contains(cr.Summary, want)
				})
			}

			s.GitHub.PutFile(c.repo, "feature-"+strings.ReplaceAll(c.name, " ", "-"), "app.txt", "change")
			pr := s.GitHub.OpenPullRequest(c.repo, "octocat", "feature-"+strings.ReplaceAll(c.name, " ", "-"), "main", "Ship it")
			body := "/ripcord rollback the canary is failing"
			cm := s.GitHub.AddComment(c.repo, pr, "octocat", body)
			s.Deliver("issue_comment", s.IssueComment(e2etest.Comment{Repository: c.repo, Number: pr, ID: cm.ID, User: "octocat", Body: body}))
			want := "ripcord cannot run `/ripcord rollback` here: " + c.says
			s.WaitFor(c.name+": the command's answer", wait, func() bool {
				for _, r := range s.GitHub.Comments(c.repo) {
					if r.User == githubtest.BotLogin && strings.Contains(r.Body, fmt.Sprintf("ripcord:reply comment-%d ", cm.ID)) {
						return strings.Contains(r.Body, want)
					}
				}
				return false
			})
		}
		s.Settle(append(jobKinds, "release_check")...)
	})
}
