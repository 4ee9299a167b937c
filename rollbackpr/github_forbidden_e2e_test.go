package rollbackpr_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/rollbackpr"
)

// A 403 that is not GitHub's rate limit (the App lacks a permission on the GitOps
// repository) is permanent: no retry of the job gets past it, so the person who asked
// is told at once, with GitHub's message and the permissions the App needs. A 403 that
// is the rate limit passes with time and stays temporary.
func TestOpenRefusedWith403(t *testing.T) {
	for _, tt := range []struct {
		name      string
		headers   map[string]string
		body      string
		permanent bool
	}{
		{"a permission the App lacks", nil, `{"message":"Resource not accessible by integration"}`, true},
		{"primary rate limit", map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1796040000"},
			`{"message":"API rate limit exceeded for installation ID 1."}`, false},
		{"secondary rate limit", nil, `{"message":"You have exceeded a secondary rate limit.",` +
			`"documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`, false},
		{"retry after", map[string]string{"Retry-After": "3600"}, `{"message":"Please wait."}`, false},
		{"secondary rate limit without its link", nil, `{"message":"You have exceeded a secondary rate limit."}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := githubtest.NewServer(t)
			s.SetClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
			s.PutFile(gitops, "main", releaseFile, releaseYAML)
			s.Handle("POST /repos/{owner}/{repo}/git/blobs", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
				w.Header().Set("Content-Type", "application/json")
				for k, v := range tt.headers {
					w.Header().Set(k, v)
				}
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(tt.body))
			})

			_, err := rollbackpr.Open(context.Background(), rollbackpr.NewGitHub(s.Client()), nil, request())
			if err == nil {
				t.Fatal("Open succeeded through a 403")
			}
			if got := rollbackpr.Permanent(err); got != tt.permanent {
				t.Errorf("Permanent(%v) = %v, want %v", err, got, tt.permanent)
			}
			if got := errors.Is(err, rollbackpr.ErrForbidden); got != tt.permanent {
				t.Errorf("errors.Is(%v, ErrForbidden) = %v, want %v", err, got, tt.permanent)
			}
			if tt.permanent {
				for _, want := range []string{"Resource not accessible by integration", "contents: write", "pull_requests: write"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
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
		})
	}
}
