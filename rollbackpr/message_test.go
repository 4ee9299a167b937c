package rollbackpr_test

import (
	"github.com/ripcord/ripcord/rollbackpr"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sampleRollback() rollbackpr.Rollback {
	return rollbackpr.Rollback{
		App:            "checkout",
		Environment:    "prod",
		Cluster:        "prod-eu",
		ReleaseID:      "rb-7f3a:prod-eu/prod",
		RollbackOf:     "c0ffee-42:prod-eu/prod",
		Reason:         "canary aborted: 5xx > 2%",
		Image:          "ghcr.io/acme/checkout",
		Digest:         "sha256:" + strings.Repeat("2", 64),
		GitRevision:    fullSHA,
		ConfigRevision: "main",
		Replaced: rollbackpr.Replaced{
			Image:       "ghcr.io/acme/checkout",
			Digest:      "sha256:" + strings.Repeat("1", 64),
			GitRevision: "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
		},
		Eligibility: rollbackpr.Eligibility{
			Eligible:  true,
			Reason:    "digest reached healthy in checkout/prod/prod-eu",
			ReleaseID: "abc-41:prod-eu/prod",
			HealthyAt: time.Date(2026, 10, 9, 14, 3, 0, 0, time.UTC),
			Window:    5,
		},
		Links: []rollbackpr.Link{{Text: "release record", URL: "https://ripcord.example/releases/rb-7f3a"}},
	}
}

func TestCommitMessageTrailersReadBackByGit(t *testing.T) {
	tests := []struct {
		name, reason, wantReason string
	}{
		{"reason with a colon", "health check failed: 503 from /healthz", "health check failed: 503 from /healthz"},
		{"reason with unicode", "Fehlerrate über 2 % — zurück ✓", "Fehlerrate über 2 % — zurück ✓"},
		{"reason with newlines is folded to one line", "line one\nline two\r\n\n  Key: not a trailer", "line one line two Key: not a trailer"},
		{"reason with tabs and trailing space", "\ttabbed\t reason  ", "tabbed reason"},
		{"empty reason", "", "no reason given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sampleRollback()
			r.Reason = tt.reason
			msg := rollbackpr.CommitMessage(r)
			want := map[string]string{
				"Ripcord-Release-Kind":    "rollback",
				"Ripcord-Rollback-Of":     "c0ffee-42:prod-eu/prod",
				"Ripcord-Rollback-Reason": tt.wantReason,
			}
			out, err := git(t, t.TempDir(), msg, "interpret-trailers", "--parse")
			if err != nil {
				t.Fatal(err)
			}
			assertTrailers(t, "git interpret-trailers --parse", gitTrailers(t, out), want)
			assertTrailers(t, "ParseTrailers", rollbackpr.ParseTrailers(msg), want)
			if !strings.HasPrefix(msg, "Rollback: checkout prod to 1a2b3c4d\n\n") {
				t.Errorf("subject is not the title:\n%s", msg)
			}
		})
	}
}

func TestCommitMessageTrailersSurviveARealCommit(t *testing.T) {
	// The message goes through git commit and comes back out of git log, as a reviewer or
	// a later ripcord would read it from the repository.
	dir := t.TempDir()
	if _, err := git(t, dir, "", "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "release.yaml"), []byte("image: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := git(t, dir, "", "add", "release.yaml"); err != nil {
		t.Fatal(err)
	}
	r := sampleRollback()
	r.Reason = "p99: 2.3s\nsee #incident-12"
	if _, err := git(t, dir, rollbackpr.CommitMessage(r), "commit", "-q", "--cleanup=verbatim", "-F", "-"); err != nil {
		t.Fatal(err)
	}
	out, err := git(t, dir, "", "log", "-1", "--format=%(trailers:only,unfold)")
	if err != nil {
		t.Fatal(err)
	}
	assertTrailers(t, "git log", gitTrailers(t, out), map[string]string{
		"Ripcord-Release-Kind":    "rollback",
		"Ripcord-Rollback-Of":     "c0ffee-42:prod-eu/prod",
		"Ripcord-Rollback-Reason": "p99: 2.3s see #incident-12",
	})
}

func TestParseTrailersRejectsAProseLastParagraph(t *testing.T) {
	if got := rollbackpr.ParseTrailers("Subject\n\nJust prose: with a colon and more words\nand a second line\n"); got != nil {
		t.Errorf("ParseTrailers = %v, want nil for a prose paragraph", got)
	}
	if got := rollbackpr.ParseTrailers("Ripcord-Release-Kind: rollback"); got != nil {
		t.Errorf("ParseTrailers = %v, want nil for a subject-only message", got)
	}
}

func assertTrailers(t *testing.T, who string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: trailer %s = %q, want %q (all: %q)", who, k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d trailers %q, want %d", who, len(got), got, len(want))
	}
}
