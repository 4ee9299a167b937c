package gatesflow_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The gates trust the release records of an app's environment for the
// commit a digest was built from. checkout/prod belongs to acme/checkout-src,
// the repository of its first release: a workflow of another repository
// (mallory/fork, the App installed there too) that registers the digest the
// pull request pins, with a signed commit of its own, is refused, and
// commit-signing asks about the owner's commit in the owner's repository.
func TestGatesTrustOnlyTheOwnersRecordOfADigest(t *testing.T) {
	t.Parallel()
	const (
		owner, other       = "acme/checkout-src", "mallory/fork"
		ownCommit, evilSHA = "0123456789abcdef0123456789abcdef01234567", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
	)
	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig(`commit_signing: true`, "prod"))
	for _, r := range []string{repo, owner, other} {
		e.Install(r)
	}
	// The owner's first release, which the pull request promotes.
	e.Fact(map[string]any{"source": "task", "repository": owner, "workflow_run_id": 9100, "run_attempt": 1,
		"status": "in_progress", "app": "checkout", "environment": "prod", "cluster": "prod-eu", "release_id": "own-1",
		"images": []string{"reg.example.com/checkout@" + digestB}, "metadata": map[string]string{"commit": ownCommit},
		"observed_at": time.Now().UTC().Format(time.RFC3339Nano)})
	// Another repository's workflow registers the same digest, newer.
	tok := e.Issuer.Token(t, map[string]any{"repository": other, "run_id": "9200", "sub": "repo:" + other + ":ref:refs/heads/main"})
	body, _ := json.Marshal(map[string]any{"release_id": "evil-1", "app": "checkout", "environment": "prod", "cluster": "prod-eu",
		"repository": other, "image": "reg.example.com/checkout@" + digestB, "git_revision": evilSHA})
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/api/v1/releases", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("%s registering a release of checkout/prod: %d, want 403", other, resp.StatusCode)
	}

	var mu sync.Mutex
	var asked []string
	e.GitHub.Handle("GET /repos/{owner}/{repo}/commits/{ref}", func(w http.ResponseWriter, _ *http.Request, p map[string]string) {
		mu.Lock()
		asked = append(asked, p["owner"]+"/"+p["repo"]+"@"+p["ref"])
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"sha": p["ref"], "commit": map[string]any{
			"message": "signed", "verification": map[string]any{"verified": true, "reason": "valid"}}})
	})
	base, head, number := openBump(e, repo)
	e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
	e.WaitFor("the commit-signing gate", 20*time.Second, func() bool { return len(completedRuns(e, head)) == 1 })
	cr := completedRuns(e, head)["ripcord/commit-signing"]
	mu.Lock()
	defer mu.Unlock()
	if want := fmt.Sprintf("%s@%s", owner, ownCommit); len(asked) != 1 || asked[0] != want || cr.Conclusion != "success" {
		t.Errorf("commit-signing asked %v and concluded %s, want %s only, passing:\n%s", asked, cr.Conclusion, want, cr.Summary)
	}
}
