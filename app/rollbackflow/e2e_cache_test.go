package rollbackflow_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

var (
	// coldBaseCalls read the GitOps base branch's head and release file when
	// the base cache does not hold them.
	coldBaseCalls = []string{
		"GET /repos/{owner}/{repo}/commits/{ref} 200",
		"GET /repos/{owner}/{repo}/contents/{path} 200",
	}
	// warmBaseCalls are a rollback pull request on a warm cache: the commit
	// through the Git Data API, the branch at it, the pull request, its label.
	warmBaseCalls = []string{
		"POST /repos/{owner}/{repo}/git/blobs 201",
		"POST /repos/{owner}/{repo}/git/trees 201",
		"POST /repos/{owner}/{repo}/git/commits 201",
		"POST /repos/{owner}/{repo}/git/refs 201",
		"POST /repos/{owner}/{repo}/pulls 201",
		"POST /repos/{owner}/{repo}/issues/{issue_number}/labels 200",
	}
)

// rollback asks for a rollback through the API and waits for its pull
// request; it returns the GitOps calls the rollback made.
func (s *scene) rollback(body string) []string {
	s.T.Helper()
	before := len(s.gitopsCalls())
	status, out := s.Do("POST", "/api/v1/rollbacks", "application/json", []byte(body))
	if status != 202 {
		s.T.Fatalf("POST /api/v1/rollbacks %s = %d %s", body, status, out)
	}
	var acc rollbackflow.Accepted
	if err := json.Unmarshal(out, &acc); err != nil {
		s.T.Fatal(err)
	}
	s.waitRelease(acc.ReleaseID)
	s.Settle(jobKinds...)
	return s.gitopsCalls()[before:]
}

// pushMain commits files to main of the GitOps repository and delivers the
// signed push webhook GitHub sends for it; it returns the new head.
func (s *scene) pushMain(files map[string]string) string {
	s.T.Helper()
	before, _ := s.GitHub.Ref(gitops, "heads/main")
	var after string
	var paths []string
	for path, content := range files {
		after = s.GitHub.PutFile(gitops, "main", path, content)
		paths = append(paths, path)
	}
	head, _ := s.GitHub.Commit(gitops, after)
	body := e2etest.Edit(s.T, s.Push(gitops, after, paths...), func(m map[string]any) {
		m["before"], m["forced"], m["created"] = before, false, false
		commit := m["commits"].([]any)[0].(map[string]any)
		commit["tree_id"] = head.Tree
		m["head_commit"] = commit
	})
	s.Deliver("push", body)
	s.Settle(jobKinds...)
	return after
}

// Two rollbacks of one environment: the first reads the GitOps base (eight
// calls), its pull request is closed (one rollback pull request may be open
// per environment), an unrelated push to main moves the cached base on, and
// the second is six calls — blob, tree, commit, ref, pull request, label —
// on the pushed head.
func TestRollbackOnAWarmBaseCache(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		s := newScene(t, dbURL)
		cold := s.rollback(`{"app":"checkout","environment":"prod","to":"r1:prod-eu/prod","reason":"back to r1"}`)
		t.Logf("cold base cache: rollback pull request in %d GitHub calls:\n  %s", len(cold), strings.Join(cold, "\n  "))
		if want := append(append([]string(nil), coldBaseCalls...), warmBaseCalls...); !reflect.DeepEqual(cold, want) {
			t.Errorf("cold calls:\n  %s\nwant:\n  %s", strings.Join(cold, "\n  "), strings.Join(want, "\n  "))
		}

		first, _ := s.release(s.String(`SELECT release_id FROM records WHERE kind = 'rollback'`))
		s.closePullRequest(first.PRNumber)
		s.Deliver("pull_request", s.closedEvent(first))
		s.Settle(jobKinds...)

		head := s.pushMain(map[string]string{"README.md": "gitops\n"})
		warm := s.rollback(`{"app":"checkout","environment":"prod","reason":"r3 leaks memory"}`)
		t.Logf("warm base cache: rollback pull request in %d GitHub calls:\n  %s", len(warm), strings.Join(warm, "\n  "))
		if !reflect.DeepEqual(warm, warmBaseCalls) {
			t.Errorf("warm calls:\n  %s\nwant:\n  %s", strings.Join(warm, "\n  "), strings.Join(warmBaseCalls, "\n  "))
		}
		branch := "release-rollback-prod-" + sha(2)[:8]
		tip, _ := s.GitHub.Ref(gitops, "heads/"+branch)
		c, _ := s.GitHub.Commit(gitops, tip)
		if len(c.Parents) != 1 || c.Parents[0] != head {
			t.Errorf("%s is on %v, want the pushed head of main %s", branch, c.Parents, head)
		}
		if got, _ := s.GitHub.FileAt(gitops, branch, "README.md"); got != "gitops\n" {
			t.Errorf("%s lacks the pushed README.md: %q", branch, got)
		}
		if out, err := git(t, c.Message, "interpret-trailers", "--parse"); err != nil || !strings.Contains(out, "Ripcord-Rollback-Reason: r3 leaks memory\n") {
			t.Errorf("git interpret-trailers --parse = %q, %v", out, err)
		}
		if n := len(s.GitHub.PullRequests(gitops)); n != 2 {
			t.Errorf("pull requests = %d, want the two rollbacks", n)
		}
	})
}
