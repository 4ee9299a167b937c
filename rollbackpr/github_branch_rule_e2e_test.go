package rollbackpr_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/rollbackpr"
)

// A ruleset (or a branch protection rule) that covers ripcord's rollback branches makes
// GitHub refuse the branch with a 422 however often it is asked. The refusal on a base
// read fresh (at once without a cache, after the one fresh re-read with one) is
// permanent, so the person who asked is told at once, with the branch pattern to let
// through, rather than after hours of retries.
func TestOpenRefusedByABranchRule(t *testing.T) {
	s := githubtest.NewServer(t)
	s.SetClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
	s.PutFile(gitops, "main", releaseFile, releaseYAML)
	refs := 0
	s.Handle("POST /repos/{owner}/{repo}/git/refs", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		refs++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"message":"Repository rule violations found\n\nCannot create ref due to creations being restricted.\n\n",` +
			`"documentation_url":"https://docs.github.com/rest/git/refs#create-a-reference","status":"422"}`))
	})
	gh := rollbackpr.NewGitHub(s.Client())
	cache := newCache()

	for i, tt := range []struct {
		name string
		refs int // branch writes asked for so far
	}{
		{"a cold cache: the base read fresh", 1},
		{"a warm cache: refused again after one fresh re-read", 3},
	} {
		_, err := rollbackpr.Open(context.Background(), gh, cache, request())
		if err == nil {
			t.Fatalf("%s: Open succeeded through a refused branch", tt.name)
		}
		if !rollbackpr.Permanent(err) {
			t.Errorf("%s: Permanent(%v) = false, want true", tt.name, err)
		}
		for _, want := range []string{"creations being restricted", "branch protection rule or ruleset", rollbackpr.BranchPrefix + "*"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", tt.name, err, want)
			}
		}
		if refs != tt.refs {
			t.Errorf("%s (call %d): branch writes = %d, want %d", tt.name, i+1, refs, tt.refs)
		}
	}
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			t.Errorf("%s %s: %s", r.Method, r.Path, r.Invalid)
		}
	}
	if n := len(s.PullRequests(gitops)); n != 0 {
		t.Errorf("pull requests = %d, want none", n)
	}
}
