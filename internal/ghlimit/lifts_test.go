package ghlimit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

// Lifts reads the error a real go-github client makes of GitHub's answer,
// whichever of its types that is, the same way for every caller.
func TestLifts(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	reset := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	for _, tc := range []struct {
		name    string
		status  int
		header  []string
		body    string
		at      time.Duration // from now, when limited
		named   bool
		limited bool
	}{
		{"primary limit spent waits for the reset plus margin", 403,
			[]string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset(25 * time.Minute)}, `{"message":"API rate limit exceeded"}`,
			25*time.Minute + ResetMargin, true, true},
		{"Retry-After wins over the reset of a spent primary limit", 403,
			[]string{"Retry-After", "600", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset(25 * time.Minute)}, `{"message":"API rate limit exceeded"}`,
			10 * time.Minute, true, true},
		{"a reset already past waits a minute", 403,
			[]string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset(-time.Minute)}, `{"message":"API rate limit exceeded"}`,
			SecondaryLimitWait, false, true},
		{"secondary limit with its documentation link and Retry-After", 403, []string{"Retry-After", "120"},
			`{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`,
			2 * time.Minute, true, true},
		{"secondary limit named in the message only waits a minute", 403, nil, secondaryBody,
			SecondaryLimitWait, false, true},
		{"429 with Retry-After", 429, []string{"Retry-After", "300"}, `{"message":"Too Many Requests"}`,
			5 * time.Minute, true, true},
		{"429 naming no time waits a minute", 429, nil, `{"message":"Too Many Requests"}`,
			SecondaryLimitWait, false, true},
		{"a permission 403 is no limit", 403, []string{"X-RateLimit-Remaining", "4000"},
			`{"message":"Resource not accessible by integration"}`, 0, false, false},
		{"a 404 is no limit", 404, nil, `{"message":"Not Found"}`, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for i := 0; i+1 < len(tc.header); i += 2 {
					w.Header().Set(tc.header[i], tc.header[i+1])
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			gh, err := github.NewClient(srv.Client()).WithEnterpriseURLs(srv.URL+"/", srv.URL+"/")
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = gh.Repositories.Get(context.Background(), "acme", "checkout")
			if err == nil {
				t.Fatal("no error from GitHub's refusal")
			}
			at, named, limited := Lifts(err, now)
			if limited != tc.limited || named != tc.named || (limited && !at.Equal(now.Add(tc.at))) {
				t.Fatalf("Lifts(%T) = %s, named %v, limited %v; want %s from now, named %v, limited %v",
					err, at.Sub(now), named, limited, tc.at, tc.named, tc.limited)
			}
			if Limited(err) != tc.limited {
				t.Errorf("Limited(%T) = %v, want %v: a refusal and a rate limit are told apart as Lifts tells them", err, !tc.limited, tc.limited)
			}
		})
	}
}

// A write the client held back for its own pacing, as the job gets it
// (go-github's *url.Error around the transport's error, wrapped by the
// job), lifts when the pace lets it go: the job snoozes to that time, as
// for GitHub's own answers, and not a minute when it is nearer.
func TestLiftsAPacedWrite(t *testing.T) {
	now := time.Now()
	paced := &PacedError{Method: "POST", Route: "/repos/{owner}/{repo}/issues/{issue_number}/comments",
		At: now.Add(40 * time.Second), Wait: 40 * time.Second, Left: 10 * time.Second}
	err := fmt.Errorf("reply on acme/api#7: %w",
		&url.Error{Op: "Post", URL: "https://api.github.com/repos/acme/api/issues/7/comments", Err: paced})
	at, named, limited := Lifts(err, now)
	if !limited || !named || !at.Equal(paced.At) {
		t.Fatalf("Lifts(%v) = %s from now, named %v, limited %v; want 40s, named, limited", err, at.Sub(now), named, limited)
	}
	if d := Snooze(at, now); d != 40*time.Second {
		t.Errorf("Snooze = %s, want 40s, when the pace lets the write go", d)
	}
}
