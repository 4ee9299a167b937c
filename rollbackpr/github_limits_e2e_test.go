package rollbackpr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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

// A reason longer than GitHub takes in a pull request description (a long command
// line, an API caller's pasted log) still gets its rollback pull request: the body
// quotes the reason cut, says so, and the commit's trailer keeps it whole. Asking again
// finds the same pull request and leaves its body as it is.
func TestOpenWithALongReasonFitsGitHubsBodyLimit(t *testing.T) {
	s := githubtest.NewServer(t)
	s.SetClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
	githubLimits(t, s)
	s.PutFile(gitops, "main", releaseFile, releaseYAML)
	gh := rollbackpr.NewGitHub(s.Client())
	req := request()
	req.Rollback.Reason = strings.Repeat("the canary fails: 5xx über 2 % ", 2500)

	res, err := rollbackpr.Open(context.Background(), gh, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	prs := s.PullRequests(gitops)
	if len(prs) != 1 {
		t.Fatalf("pull requests = %+v, want one", prs)
	}
	body := prs[0].Body
	if n := utf8.RuneCountInString(body); n > 65536 || !utf8.ValidString(body) {
		t.Errorf("body is %d characters (valid UTF-8: %v), want at most 65536", n, utf8.ValidString(body))
	}
	if !strings.Contains(body, "> the canary fails: 5xx über 2 % the canary") || !strings.Contains(body, "Ripcord-Rollback-Reason trailer has it whole") {
		t.Errorf("body does not quote the start of the reason and say where the rest is:\n%.600s", body)
	}
	if !strings.Contains(body, "### Eligibility") {
		t.Error("the body lost its eligibility section")
	}
	head, _ := s.Ref(gitops, "heads/"+res.Branch)
	c, _ := s.Commit(gitops, head)
	if got := rollbackpr.ParseTrailers(c.Message)["Ripcord-Rollback-Reason"]; got != strings.TrimSpace(req.Rollback.Reason) {
		t.Errorf("the trailer holds %d bytes of the reason, want all %d", len(got), len(strings.TrimSpace(req.Rollback.Reason)))
	}

	again, err := rollbackpr.Open(context.Background(), gh, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.PullRequest != res.PullRequest || again.PullRequestOutcome != rollbackpr.Reused {
		t.Errorf("asking again = %+v, want pull request #%d reused as it is", again, res.PullRequest)
	}
}

// GitHub opens the pull request but its answer is lost (a 502 after the fact), and
// then the label's answer is lost too: each retry of the job finds what the earlier
// attempt made, so there is one branch, one rollback commit and one labelled pull
// request in the end.
func TestOpenAfterGitHubsAnswersWereLostMakesNothingTwice(t *testing.T) {
	s := githubtest.NewServer(t)
	s.SetClock(func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) })
	base := s.PutFile(gitops, "main", releaseFile, releaseYAML)
	lose := func(pattern string) {
		do := s.Default(pattern)
		lost := false
		s.Handle(pattern, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			if lost {
				do(w, r, p)
				return
			}
			lost = true
			do(httptest.NewRecorder(), r, p)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"message":"Server Error"}`))
		})
	}
	lose("POST /repos/{owner}/{repo}/pulls")
	lose("POST /repos/{owner}/{repo}/issues/{issue_number}/labels")
	gh := rollbackpr.NewGitHub(s.Client())

	var res rollbackpr.Result
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		// A new clock second: the retry writes a commit of its own, not the same object.
		at := time.Date(2026, 11, 29, 12, 0, attempt, 0, time.UTC)
		s.SetClock(func() time.Time { return at })
		res, err = rollbackpr.Open(context.Background(), gh, nil, request())
		if err == nil {
			break
		}
		if rollbackpr.Permanent(err) {
			t.Fatalf("attempt %d: a lost answer is taken as permanent: %v", attempt, err)
		}
		t.Logf("attempt %d: %v", attempt, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	prs := s.PullRequests(gitops)
	if len(prs) != 1 || prs[0].Head != branch || prs[0].Number != res.PullRequest || len(prs[0].Labels) != 1 || prs[0].Labels[0] != rollbackpr.Label {
		t.Errorf("pull requests = %+v, want one labelled from %s (result %+v)", prs, branch, res)
	}
	head, _ := s.Ref(gitops, "heads/"+branch)
	c, _ := s.Commit(gitops, head)
	if head != res.Commit || len(c.Parents) != 1 || c.Parents[0] != base {
		t.Errorf("branch head %s (parents %v), result commit %s: want the first attempt's commit on %s", head, c.Parents, res.Commit, base)
	}
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			t.Errorf("%s %s: %s", r.Method, r.Path, r.Invalid)
		}
	}
}
