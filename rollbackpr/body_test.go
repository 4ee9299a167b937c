package rollbackpr_test

import (
	"flag"
	"github.com/ripcord/ripcord/rollbackpr"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the body golden files in testdata/body (review the diff before committing)")

func TestBodyGolden(t *testing.T) {
	notEligible := sampleRollback()
	notEligible.Eligibility = rollbackpr.Eligibility{Reason: "sha256:2222… never reached healthy in the newest 5 releases of checkout in prod (prod-eu)."}
	notEligible.Links = nil
	notEligible.Replaced = rollbackpr.Replaced{}

	tests := []struct {
		file string
		r    rollbackpr.Rollback
	}{
		{"eligible.md", sampleRollback()},
		{"not_eligible.md", notEligible},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := rollbackpr.Body(tt.r)
			path := filepath.Join("testdata", "body", tt.file)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("Body differs from %s\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
			}
		})
	}
}

func TestBodySaysWhatMatters(t *testing.T) {
	r := sampleRollback()
	body := rollbackpr.Body(r)
	for _, want := range []string{"c0ffee-42:prod-eu/prod", "rb-7f3a:prod-eu/prod", r.Digest, r.Replaced.Digest, "> `canary aborted: 5xx > 2%`", "**Eligible rollback target.**", "abc-41:prod-eu/prod", "2026-10-09T14:03:00Z", "newest 5 releases", "(https://ripcord.example/releases/rb-7f3a)"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	r.Eligibility = rollbackpr.Eligibility{}
	if body := rollbackpr.Body(r); !strings.Contains(body, "**Not eligible:**") || !strings.Contains(body, "gets every gate") || strings.Contains(body, "Eligible rollback target") {
		t.Errorf("a target without eligibility evidence must say it gets every gate:\n%s", body)
	}
}

func TestBodyQuotesAReasonThatLooksLikeACommand(t *testing.T) {
	r := sampleRollback()
	r.Reason = "broken\n/ripcord approve\n## Heading"
	body := rollbackpr.Body(r)
	if regexp.MustCompile(`(?m)^/ripcord`).MatchString(body) {
		t.Errorf("a command in the reason starts a line of the body:\n%s", body)
	}
	if regexp.MustCompile(`(?m)^## Heading`).MatchString(body) {
		t.Errorf("markdown in the reason starts a line of the body:\n%s", body)
	}
}

func TestBodyTableSurvivesAPipe(t *testing.T) {
	r := sampleRollback()
	r.Image = "weird|image"
	if body := rollbackpr.Body(r); !strings.Contains(body, "`weird\\|image`") {
		t.Errorf("a | in a value must be escaped in the table:\n%s", body)
	}
}

// A reason is someone's words: a mention or an issue reference typed into
// it must not notify anyone from ripcord's pull request, nor a link look
// as if ripcord vouched for it. A reason too long for GitHub is cut so that
// the whole body fits, however its inert form is fenced.
func TestBodyShowsTheReasonInert(t *testing.T) {
	r := sampleRollback()
	r.Reason = "@acme/sre says #12 broke it, see https://evil.example"
	body := rollbackpr.Body(r)
	if !strings.Contains(body, "> `` "+r.Reason+" ``") && !strings.Contains(body, "> `"+r.Reason+"`") {
		t.Errorf("the reason is not shown as code:\n%s", body)
	}
	r.Reason = "@sre " + strings.Repeat("a`b``c ", 20000)
	body = rollbackpr.Body(r)
	if len(body) > rollbackpr.BodyMax || !strings.Contains(body, "cut to fit") {
		t.Errorf("a long reason gives a body of %d bytes (max %d), cut: %t", len(body), rollbackpr.BodyMax, strings.Contains(body, "cut to fit"))
	}
	if regexp.MustCompile("(?m)^> @sre").MatchString(body) {
		t.Errorf("the cut reason's mention is bare:\n%.300s", body)
	}
}
