package gates

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type alertsFake struct {
	alerts   []Alert
	err      error
	repo     string
	ref      string
	consults int
}

func (f *alertsFake) OpenAlerts(_ context.Context, repository, ref string) (Scan, error) {
	f.consults++
	f.repo, f.ref = repository, ref
	return Scan{Alerts: f.alerts}, f.err
}

func TestSASTGate(t *testing.T) {
	s := Subject{Repository: "acme/checkout", GitRevision: "abcdef0123456789abcdef0123456789abcdef01"}
	sqli := Alert{Number: 7, RuleID: "go/sql-injection", Severity: "error", SecuritySeverity: "high", Description: "SQL query built from user input", Tool: "CodeQL", Path: "db.go", Line: 42}
	noteOnly := Alert{Number: 8, RuleID: "go/unused", Severity: "note"}
	warning := Alert{Number: 9, RuleID: "go/weak-hash", Severity: "warning"}
	cases := []struct {
		name      string
		alerts    []Alert
		err       error
		threshold string
		subject   Subject
		want      Outcome
		because   string
	}{
		{"no alerts passes", nil, nil, "high", s, Pass, "no open code-scanning alert at or above high"},
		{"high security alert fails a high threshold", []Alert{sqli}, nil, "high", s, Fail, "go/sql-injection"},
		{"security severity wins over rule severity", []Alert{sqli}, nil, "error", s, Pass, "1 below"},
		{"note under a low threshold passes", []Alert{noteOnly}, nil, "low", s, Pass, "1 below"},
		{"note under a note threshold fails", []Alert{noteOnly}, nil, "note", s, Fail, "go/unused"},
		{"warning ranks as medium", []Alert{warning}, nil, "medium", s, Fail, "go/weak-hash"},
		{"alert with no severity fails closed", []Alert{{Number: 3, RuleID: "custom/rule"}}, nil, "error", s, Fail, "custom/rule"},
		{"GitHub down cannot decide", nil, errors.New("502 Bad Gateway"), "high", s, Error, "502"},
		{"unknown git revision cannot decide", nil, nil, "high", Subject{Repository: "acme/checkout"}, Error, "git revision is unknown"},
		{"bad threshold cannot decide", nil, nil, "severe", s, Error, "gates.sast.severity"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &alertsFake{alerts: c.alerts, err: c.err}
			v := SAST{GitHub: f, Severity: c.threshold}.Evaluate(context.Background(), c.subject)
			text := v.Summary
			for _, fd := range v.Findings {
				text += " " + fd.ID + " " + fd.Message
			}
			if v.Outcome != c.want || !strings.Contains(text, c.because) {
				t.Fatalf("verdict %s %q, want %s mentioning %q", v.Outcome, text, c.want, c.because)
			}
		})
	}
}

func TestSASTAsksAtTheReleaseRevision(t *testing.T) {
	f := &alertsFake{}
	SAST{GitHub: f, Severity: "high"}.Evaluate(context.Background(), Subject{Repository: "acme/checkout", GitRevision: "abcdef01"})
	if f.repo != "acme/checkout" || f.ref != "abcdef01" {
		t.Fatalf("asked %s at %q, want acme/checkout at the release's git revision", f.repo, f.ref)
	}
}

func TestSASTFindingsAreNotAnnotations(t *testing.T) {
	f := &alertsFake{alerts: []Alert{{Number: 1, RuleID: "go/sql-injection", SecuritySeverity: "critical", Path: "db.go", Line: 4}}}
	s := Subject{Repository: "acme/checkout", GitRevision: "abcdef01"}
	v := SAST{GitHub: f, Severity: "high"}.Evaluate(context.Background(), s)
	if out := Render(NameSAST, Content, v, s); len(out.Annotations) != 0 || !strings.Contains(out.Summary, "db.go:4") {
		t.Fatalf("annotations %+v, summary:\n%s\nwant the location in the table, not an annotation on the PR", out.Annotations, out.Summary)
	}
}

func TestSASTIsAdvisoryOnAnEligibleRollbackOnly(t *testing.T) {
	f := &alertsFake{alerts: []Alert{{Number: 1, RuleID: "go/sql-injection", SecuritySeverity: "critical"}}}
	for _, c := range []struct {
		name   string
		digest string
		want   Conclusion
	}{
		{"eligible rollback reports and passes", oldDigest, Neutral},
		{"ineligible Rollback: PR blocks", badDigest, Failure},
	} {
		s := Assess(history(), nil, Subject{Repository: "acme/checkout", App: "checkout", Environment: "prod", Cluster: "prod-eu",
			Image: "reg/checkout@" + c.digest, Digest: c.digest, Title: "Rollback: checkout", GitRevision: "abcdef0123456789"}, 5)
		r := Evaluate(context.Background(), []Gate{SAST{GitHub: f, Severity: "high"}}, s)[0]
		if r.Output.Conclusion != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, r.Output.Conclusion, r.Output.Title, c.want)
		}
	}
}
