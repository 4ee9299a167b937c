package rollbackflow_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// raceEnvironments is how many environments the race is run in, one round
// each: the check of one round loses the race most of the time, so this
// many fail on a check that is not atomic.
const raceEnvironments = 8

// raceScene is newScene with raceEnvironments more environments of
// checkout (race0, race1, …), each rolling back by pull request in its own
// release file, with r1 and r2 healthy and r3 failed. GitHub writes are
// paced on a clock that moves only when waited on: the scene makes more
// than GitHub's 80 a minute.
func raceScene(t *testing.T, dbURL string) (*scene, []string) {
	s := newSceneWith(t, dbURL, app.Options{GitHubClock: ghclient.NewStepClock(time.Now().UTC())})
	return s, raceEnvironmentsOf(s)
}

// raceEnvironmentsOf adds raceScene's environments to s.
func raceEnvironmentsOf(s *scene) []string {
	cfg := repoConfig
	var envs []string
	for i := range raceEnvironments {
		env := fmt.Sprintf("race%d", i)
		file := "apps/checkout/" + env + "/release.yaml"
		cfg += fmt.Sprintf(`      %s:
        cluster: prod-eu
        workflows: [deploy.yml]
        rollback:
          mode: pull-request
          repository: acme/gitops
          base: main
          file: %s
          fields: {image: image.ref, digest: image.digest, release_id: release.id}
`, env, file)
		s.GitHub.PutFile(gitops, "main", file, strings.ReplaceAll(releaseYAML, "prod-eu/prod", "prod-eu/"+env))
		envs = append(envs, env)
	}
	s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", cfg)
	for i, env := range envs {
		for n, status := range []string{"success", "success", "failed"} {
			s.factIn(env, int64(8000+10*i+n+1), status, fmt.Sprintf("r%d:prod-eu/%s", n+1, env), image(n+1), sha(n+1))
		}
	}
	return envs
}

// The race tests of this file run in parallel with the others again. Once,
// beside three other scenes on a machine at load 24-28, a fact posted by
// raceScene was answered 500 on SQLite, with the server's log discarded;
// 2026-12-03 it did not recur in 12 runs of each on SQLite and 2 on
// PostgreSQL (-parallel 4 to 8, some beside two other packages). Should it, the server's log is now shown with the failure
// (internal/testlog).

// atOnce calls do(0) … do(n-1), each in its own goroutine, all released
// together, and returns when every call has.
func atOnce(n int, do func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			do(i)
		}()
	}
	close(start)
	wg.Wait()
}

// rollbackAsk is one POST /api/v1/rollbacks of body to the server at url.
type rollbackAsk struct{ url, body string }

// postAtOnce sends every ask at the same moment, each from its own
// goroutine, and returns their statuses and bodies in the asks' order.
func postAtOnce(t *testing.T, asks []rollbackAsk) ([]int, []string) {
	t.Helper()
	status, out := make([]int, len(asks)), make([]string, len(asks))
	errs := make([]error, len(asks))
	atOnce(len(asks), func(i int) { status[i], out[i], errs[i] = postTo(asks[i].url, asks[i].body) })
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return status, out
}

// postTo is POST /api/v1/rollbacks to the server at url, from any
// goroutine (Env.Do may stop the test, which only the test's goroutine may
// do).
func postTo(url, body string) (int, string, error) {
	req, err := http.NewRequest("POST", url+"/api/v1/rollbacks", bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+e2etest.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), err
}

// Two POST /api/v1/rollbacks of one environment to different targets (the
// default, r2, and r1) that arrive together: both used to pass the check
// before either had queued its job, and two rollback pull requests were
// opened. One is accepted; the other is a 409 naming it, as when they come
// one after the other.
func TestRollbackAPIRaceToTwoTargetsOpensOnePullRequest(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s, envs := raceScene(t, dbURL)
		for _, env := range envs {
			status, out := postAtOnce(t, []rollbackAsk{
				{s.URL, fmt.Sprintf(`{"app":"checkout","environment":%q,"reason":"r3 leaks memory"}`, env)},
				{s.URL, fmt.Sprintf(`{"app":"checkout","environment":%q,"to":"r1:prod-eu/%s","reason":"r2 is slow too"}`, env, env)},
			})
			won, lost := -1, -1
			for i := range status {
				switch status[i] {
				case http.StatusAccepted:
					won = i
				case http.StatusConflict:
					lost = i
				}
			}
			if won < 0 || lost < 0 {
				t.Errorf("%s: answers %d %s and %d %s, want one 202 and one 409", env, status[0], out[0], status[1], out[1])
				continue
			}
			var acc struct {
				ReleaseID string `json:"release_id"`
			}
			var e struct{ Error string }
			if err := json.Unmarshal([]byte(out[won]), &acc); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(out[lost]), &e); err != nil || !strings.Contains(e.Error, acc.ReleaseID) {
				t.Errorf("%s: the 409 is %s, want it to name the rollback accepted, %s", env, out[lost], acc.ReleaseID)
			}
		}
		s.Settle(jobKinds...)
		for _, env := range envs {
			onePullRequest(t, s, env)
		}
	})
}

// Two `/ripcord rollback` comments of one environment to different targets
// that arrive together: their deliveries are decided side by side, and both
// used to queue their jobs. One is opened; the other commenter is told,
// naming the rollback that came first, and no second pull request is
// opened.
func TestRollbackCommandRaceToTwoTargetsOpensOnePullRequest(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s, envs := raceScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		ids := map[string][]int64{}
		for _, env := range envs {
			var reqs []*http.Request
			for _, to := range []string{"r2", "r1"} {
				body := fmt.Sprintf("/ripcord rollback to %s:prod-eu/%s %s in %s is slow", to, env, "r3", env)
				c := s.GitHub.AddComment(appRepo, pr, "octocat", body)
				ids[env] = append(ids[env], c.ID)
				reqs = append(reqs, githubtest.NewDelivery(t, s.URL+"/api/github/hook", e2etest.Secret, "issue_comment",
					s.IssueComment(e2etest.Comment{Repository: appRepo, Number: pr, ID: c.ID, User: "octocat", Body: body})))
			}
			deliverTogether(t, reqs)
		}
		// Settle alone gave the whole scene's work 20 s: under -race on a
		// loaded machine its last replies (the lowest priority, queued
		// last) came later and the test failed on time, not on a second
		// pull request. Wait for what the test is about, each command's
		// answer; Settle then checks that nothing more is under way.
		s.WaitFor("an answer to each command", answersWait, func() bool {
			for _, env := range envs {
				for _, id := range ids[env] {
					if !answered(s.replies(id)) {
						return false
					}
				}
			}
			return true
		})
		s.Settle(jobKinds...)
		for _, env := range envs {
			onePullRequest(t, s, env)
			var linked, refused int
			for _, id := range ids[env] {
				for _, r := range s.replies(id) {
					switch {
					case strings.Contains(r, "Rollback pull request: "):
						linked++
					case strings.Contains(r, "Not rolling back") && strings.Contains(r, "one rollback pull request at a time"):
						refused++
					}
				}
			}
			if linked != 1 || refused != 1 {
				t.Errorf("%s: %d replies with the pull request's link and %d refusals naming the other rollback, want 1 and 1", env, linked, refused)
			}
		}
	})
}

// answersWait bounds the wait for every command of a race test to be
// answered: several times what they take under -race on a busy machine, so
// that only a stuck test fails on it.
const answersWait = 3 * time.Minute

// answered reports whether replies hold a command's answer: the pull
// request's link or a refusal (the acknowledgement promising the link is
// not one).
func answered(replies []string) bool {
	for _, r := range replies {
		if strings.Contains(r, "Rollback pull request: ") || strings.Contains(r, "Not rolling back") {
			return true
		}
	}
	return false
}

// deliverTogether posts the deliveries reqs at the same time, each from its
// own goroutine, all released together.
func deliverTogether(t *testing.T, reqs []*http.Request) {
	t.Helper()
	status := make([]int, len(reqs))
	errs := make([]error, len(reqs))
	atOnce(len(reqs), func(i int) {
		resp, err := http.DefaultClient.Do(reqs[i])
		if err != nil {
			errs[i] = err
			return
		}
		resp.Body.Close()
		status[i] = resp.StatusCode
	})
	for i := range reqs {
		if errs[i] != nil || status[i] != http.StatusAccepted {
			t.Fatalf("delivery %d = %d %v, want 202", i, status[i], errs[i])
		}
	}
}

// A click on a failed release's Roll back button (to r2) and a
// `/ripcord rollback to r1` comment of the same environment that arrive
// together: one rollback is opened, and the other is refused naming it. A
// losing click says so in its audit event (and the check run's note), not
// "Rolling back".
func TestRollbackButtonRaceWithACommentOpensOnePullRequest(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s, envs := raceScene(t, dbURL)
		s.GitHub.PutFile(appRepo, "feature", "app.txt", "change")
		pr := s.GitHub.OpenPullRequest(appRepo, "octocat", "feature", "main", "Ship it")
		s.GitHub.SetPermission(appRepo, "octocat", "write")
		comments := map[string]int64{}
		for _, env := range envs {
			body := fmt.Sprintf("/ripcord rollback to r1:prod-eu/%s r2 in %s is slow", env, env)
			c := s.GitHub.AddComment(appRepo, pr, "octocat", body)
			comments[env] = c.ID
			deliverTogether(t, []*http.Request{
				githubtest.NewDelivery(t, s.URL+"/api/github/hook", e2etest.Secret, "check_run",
					s.clickBody("r3:prod-eu/"+env, "octocat")),
				githubtest.NewDelivery(t, s.URL+"/api/github/hook", e2etest.Secret, "issue_comment",
					s.IssueComment(e2etest.Comment{Repository: appRepo, Number: pr, ID: c.ID, User: "octocat", Body: body})),
			})
		}
		s.Settle(append(jobKinds, "release_check")...)
		for _, env := range envs {
			onePullRequest(t, s, env)
			refused := s.Int(`SELECT COUNT(*) FROM audit_events WHERE release_id = $1 AND message LIKE '%clicked Roll back: Not rolling back%'
				AND message LIKE '%one rollback pull request at a time%'`, "r3:prod-eu/"+env)
			for _, r := range s.replies(comments[env]) {
				if strings.Contains(r, "Not rolling back") && strings.Contains(r, "one rollback pull request at a time") {
					refused++
				}
			}
			if refused != 1 {
				t.Errorf("%s: %d refusals naming the other rollback (the click's audit, the comment's replies), want 1", env, refused)
			}
		}
	})
}

// onePullRequest checks that exactly one rollback pull request of env was
// opened in the GitOps repository (its branch names the environment).
func onePullRequest(t *testing.T, s *scene, env string) {
	t.Helper()
	n := 0
	for _, p := range s.GitHub.PullRequests(gitops) {
		if strings.Contains(p.Head, "-"+env+"-") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("rollback pull requests of %s = %d, want 1", env, n)
	}
}
