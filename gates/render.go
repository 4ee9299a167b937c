package gates

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// GitHub's limits on a check run's output.
const (
	MaxSummary            = 65535
	MaxTitle              = 1000
	MaxAnnotationsPerCall = 50
)

// Annotation is one check-run annotation on a line of a file in the PR.
type Annotation struct {
	Path    string
	Line    int
	Level   string // notice, warning, failure
	Title   string
	Message string
}

// Output is a gate's check run, ready to write.
type Output struct {
	Name        string     // ripcord/<gate>
	Conclusion  Conclusion // success, failure or neutral
	Title       string
	Summary     string
	Annotations []Annotation
}

// Render turns a gate's verdict into its check run: the one-line verdict,
// what was judged, the findings table, links, and for an advisory pass the
// record that proves the rollback eligible.
func Render(gate string, class Class, v Verdict, s Subject) Output {
	c, t := Conclude(class, v, s.EligibleRollback())
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** (%s gate): %s\n\n", CheckName(gate), class, t)
	fmt.Fprintf(&b, "Release: `%s` in `%s`", s.App, s.Environment)
	if s.Cluster != "" {
		fmt.Fprintf(&b, "/`%s`", s.Cluster)
	}
	fmt.Fprintf(&b, ", image `%s`", orNone(s.ImageRef()))
	if s.GitRevision != "" {
		fmt.Fprintf(&b, ", git revision `%s`", s.GitRevision)
		if s.GitRevisionSource != "" {
			fmt.Fprintf(&b, " (%s)", s.GitRevisionSource)
		}
	}
	b.WriteString(".\n\n")
	if class == Content {
		b.WriteString(eligibilityNote(s))
	}
	writeFindings(&b, v.Findings)
	for _, l := range v.Links {
		fmt.Fprintf(&b, "- [%s](%s)\n", cell(l.Text), l.URL)
	}
	return Output{
		Name: CheckName(gate), Conclusion: c, Title: clip(t, MaxTitle),
		Summary: clip(b.String(), MaxSummary), Annotations: annotations(gate, c, v.Findings),
	}
}

// eligibilityNote says which treatment a content gate got and why.
func eligibilityNote(s Subject) string {
	e := s.Eligibility
	if e.Eligible {
		note := fmt.Sprintf("**%s**: %s.", AdvisoryWords, e.Reason)
		if ev := e.Evidence; ev != nil && ev.HealthyAt != nil {
			note += fmt.Sprintf(" Record `%s` (healthy at %s).", ev.ReleaseID, ev.HealthyAt.UTC().Format("2006-01-02T15:04:05Z"))
		}
		return note + " Findings are reported, not blocking.\n\n"
	}
	reason := e.Reason
	if reason == "" {
		reason = "no release record was consulted"
	}
	return fmt.Sprintf("Ordinary promotion, blocking: not an eligible rollback (%s).\n\n", reason)
}

func writeFindings(b *strings.Builder, fs []Finding) {
	if len(fs) == 0 {
		return
	}
	b.WriteString("| severity | id | where | finding |\n|---|---|---|---|\n")
	for i, f := range fs {
		row := fmt.Sprintf("| %s | %s | %s | %s |\n", cell(f.Severity), link(f.ID, f.URL), cell(where(f)), cell(f.Message))
		// Leave room for the truncation line rather than cut a row in half.
		if b.Len()+len(row) > MaxSummary-200 {
			fmt.Fprintf(b, "\n…and %d more findings not shown (GitHub limits a summary to %d characters).\n", len(fs)-i, MaxSummary)
			return
		}
		b.WriteString(row)
	}
	b.WriteString("\n")
}

func annotations(gate string, c Conclusion, fs []Finding) []Annotation {
	level := "failure"
	if c != Failure {
		level = "warning"
	}
	var out []Annotation
	for _, f := range fs {
		if f.Path == "" || f.Line <= 0 {
			continue
		}
		out = append(out, Annotation{Path: f.Path, Line: f.Line, Level: level, Title: CheckName(gate), Message: clip(f.Message, 64*1024-1)})
	}
	return out
}

// Batches splits annotations into GitHub's per-request limit.
func Batches(as []Annotation) [][]Annotation {
	var out [][]Annotation
	for len(as) > MaxAnnotationsPerCall {
		out = append(out, as[:MaxAnnotationsPerCall])
		as = as[MaxAnnotationsPerCall:]
	}
	return append(out, as)
}

func where(f Finding) string {
	if f.Path == "" {
		return ""
	}
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", f.Path, f.Line)
	}
	return f.Path
}

func link(text, url string) string {
	if url == "" {
		return cell(text)
	}
	return fmt.Sprintf("[%s](%s)", cell(text), url)
}

// cell keeps a value on one table row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
