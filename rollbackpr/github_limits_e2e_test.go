package rollbackpr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/rollbackpr"
)

// githubLimits makes the fake refuse pull requests as GitHub does when a title is longer
// than 256 characters or a body longer than 65536: a 422 "Validation Failed" naming the
// field. The fake's description of the API has no such limits, GitHub has.
func githubLimits(t *testing.T, s *githubtest.Server) {
	t.Helper()
	create := s.Default("POST /repos/{owner}/{repo}/pulls")
	s.Handle("POST /repos/{owner}/{repo}/pulls", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		var in struct{ Title, Body string }
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(body, &in)
		}
		if err != nil {
			t.Errorf("pull request body: %v", err)
		}
		for _, f := range []struct {
			field, value string
			max          int
		}{{"title", in.Title, 256}, {"body", in.Body, 65536}} {
			if utf8.RuneCountInString(f.value) > f.max {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnprocessableEntity)
				_ = json.NewEncoder(w).Encode(map[string]any{"message": "Validation Failed", "errors": []map[string]string{{
					"resource": "Issue", "code": "custom", "field": f.field,
					"message": f.field + " is too long (maximum is " + itoa(f.max) + " characters)",
				}}})
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		create(w, r, p)
	})
}

// An app or environment named at length (YAML keys have no limit) still gets its
// rollback pull request: GitHub refuses a title over 256 characters, and no retry of the
// job gets past that. The title is cut, still starts "Rollback:" and still ends with
// the target's revision, and is the commit's subject; asking again finds the same pull
// request.
func TestOpenWithALongAppNameFitsGitHubsTitleLimit(t *testing.T) {
	for _, tt := range []struct{ name, app, env string }{
		{"long app", strings.Repeat("checkout-", 40), "prod"},
		{"long app and environment", strings.Repeat("ü", 200), strings.Repeat("prod-eu-", 30)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := githubtest.NewServer(t)
			s.SetClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
			githubLimits(t, s)
			s.PutFile(gitops, "main", releaseFile, releaseYAML)
			gh := rollbackpr.NewGitHub(s.Client())
			req := request()
			req.Rollback.App, req.Rollback.Environment = tt.app, tt.env

			res, err := rollbackpr.Open(context.Background(), gh, nil, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range s.Requests() {
				if r.Invalid != "" {
					t.Errorf("%s %s: %s", r.Method, r.Path, r.Invalid)
				}
			}
			prs := s.PullRequests(gitops)
			if len(prs) != 1 {
				t.Fatalf("pull requests = %+v, want one", prs)
			}
			title := prs[0].Title
			if n := utf8.RuneCountInString(title); n > 256 || !strings.HasPrefix(title, "Rollback: ") || !strings.HasSuffix(title, " to 1a2b3c4d") {
				t.Errorf("title = %q (%d characters), want at most 256 starting Rollback: and ending with the target", title, n)
			}
			if !strings.Contains(title, "…") {
				t.Errorf("title = %q does not show it was cut", title)
			}
			head, _ := s.Ref(gitops, "heads/"+res.Branch)
			c, _ := s.Commit(gitops, head)
			if subject, _, _ := strings.Cut(c.Message, "\n"); subject != title {
				t.Errorf("commit subject %q, pull request title %q", subject, title)
			}

			again, err := rollbackpr.Open(context.Background(), gh, nil, req)
			if err != nil {
				t.Fatal(err)
			}
			if again.PullRequest != res.PullRequest || again.PullRequestOutcome != rollbackpr.Reused || again.CommitOutcome != rollbackpr.Reused {
				t.Errorf("asking again = %+v, want pull request #%d reused", again, res.PullRequest)
			}
			if n := len(s.PullRequests(gitops)); n != 1 {
				t.Errorf("%d pull requests after asking again, want 1", n)
			}
		})
	}
}
