package githubtest

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestScratch(t *testing.T) {
	start := time.Now()
	s := LoadSpec(t)
	t.Logf("load %v", time.Since(start))
	for _, c := range []struct{ m, p, b string }{
		{"POST", "/repos/o/r/check-runs", `{"name":"x","head_sha":"abc","conclusion":"bogus","status":"completed"}`},
		{"POST", "/repos/o/r/check-runs", `{"name":"x","head_sha":"abc"}`},
		{"POST", "/repos/o/r/check-runs", `{"name":"x","head_sha":"abc","status":"completed"}`},
		{"POST", "/repos/o/r/check-runs", `{"head_sha":"abc"}`},
		{"POST", "/repos/o/r/issues/3/labels", `["a","b"]`},
		{"GET", "/repos/o/r/contents/a/b/c.yaml?ref=main", ``},
		{"GET", "/repos/o/r/git/ref/heads/feature/x", ``},
		{"GET", "/repos/o/r/pulls?state=bogus&per_page=5", ``},
		{"GET", "/repos/o/r/pulls?sate=open", ``},
		{"POST", "/repos/o/r/actions/runs/5/rerun-failed-jobs", ``},
		{"POST", "/repos/o/r/actions/runs/5/rerun-all", ``},
		{"PUT", "/repos/o/r/actions/runs/5/rerun-failed-jobs", ``},
		{"POST", "/repos/o/r/actions/workflows/deploy.yml/dispatches", `{"ref":"main","inputs":{"a":"b"},"return_run_details":true}`},
		{"POST", "/repos/o/r/check-runs", `{"name":"x","head_sha":"abc","started_at":"yesterday"}`},
	} {
		r, _ := http.NewRequest(c.m, "http://127.0.0.1:1"+c.p, strings.NewReader(c.b))
		if c.b != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		m, _ := s.Match(c.m, r.URL.EscapedPath())
		t.Logf("%s %s -> %s %v\n   err=%v", c.m, c.p, m.Template, m.Params, s.Validate(r, []byte(c.b)))
	}
}
