package gates

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// CodeScanning is what sast reads of GitHub: the open alerts of the ref
// the commit sha was analysed on. GitHub lists alerts by ref (a branch or
// pull request), not by commit, so the adapter finds sha's analysis first;
// a commit no analysis covers is an error, and the gate fails closed.
type CodeScanning interface {
	OpenAlerts(ctx context.Context, repository, sha string) (Scan, error)
}

// Scan is what GitHub lists for a commit: the open alerts of Ref, the ref
// an analysis of the commit was made on, as of that ref's newest analysis,
// which is of commit Newest. That is a later commit than the one asked
// about once the ref moved on (a rollback's commit, an older release's):
// the alerts are then Newest's, and the check run must say so rather
// than put them on the release's commit. Ref and Newest are empty when
// not known.
type Scan struct {
	Ref    string
	Newest string
	Alerts []Alert
}

// Alert is an open code-scanning alert, with the rule's severities as
// GitHub reports them.
type Alert struct {
	Number int
	RuleID string
	// Severity is rule.severity (none, note, warning, error);
	// SecuritySeverity is rule.security_severity_level (low, medium, high,
	// critical), set for security rules.
	Severity         string
	SecuritySeverity string
	Description      string
	Tool             string
	Path             string
	Line             int
	URL              string
}

// sastRank orders the thresholds gates.sast.severity accepts.
var sastRank = map[string]int{"note": 1, "low": 2, "medium": 3, "high": 4, "error": 5}

// Level places an alert on the threshold scale: the security severity
// when the rule has one (critical ranks with error), else rule.severity
// (warning ranks as medium). An alert that states neither ranks highest:
// fail closed.
func (a Alert) Level() (string, int) {
	switch strings.ToLower(a.SecuritySeverity) {
	case "critical":
		return "critical", 5
	case "high", "medium", "low":
		s := strings.ToLower(a.SecuritySeverity)
		return s, sastRank[s]
	}
	switch strings.ToLower(a.Severity) {
	case "error":
		return "error", 5
	case "warning":
		return "warning", 3
	case "note":
		return "note", 1
	case "none":
		return "none", 0
	}
	return "unknown", 5
}

// SAST fails on open code-scanning alerts at the release's git revision
// at or above Severity (error, high, medium, low, note).
type SAST struct {
	GitHub   CodeScanning
	Severity string
}

// Name, Class and Evaluate implement Gate.
func (SAST) Name() string { return NameSAST }
func (SAST) Class() Class { return Content }
func (g SAST) Evaluate(ctx context.Context, s Subject) Verdict {
	min, ok := sastRank[strings.ToLower(g.Severity)]
	if !ok {
		return Errored(fmt.Sprintf("gates.sast.severity: %q is not error, high, medium, low or note", g.Severity))
	}
	if s.GitRevision == "" {
		return s.revisionUnknown()
	}
	scan, err := g.GitHub.OpenAlerts(ctx, s.CodeRepository(), s.GitRevision)
	if err != nil {
		return Errored(fmt.Sprintf("could not read code-scanning alerts of %s at %s: %v", s.CodeRepository(), short(s.GitRevision), err))
	}
	return judgeAlerts(scan, g.Severity, min, s)
}

func judgeAlerts(scan Scan, threshold string, min int, s Subject) Verdict {
	var fs []Finding
	below := 0
	for _, a := range scan.Alerts {
		level, r := a.Level()
		if r < min {
			below++
			continue
		}
		msg := orDefault(a.Description, "code-scanning alert")
		if a.Tool != "" {
			msg += " (" + a.Tool + ")"
		}
		if a.Path != "" {
			// Not an annotation: the alert's file is in the source
			// repository, which need not be the one the PR changes.
			msg += fmt.Sprintf(" at %s:%d", a.Path, a.Line)
		}
		fs = append(fs, Finding{Severity: level, ID: orDefault(a.RuleID, fmt.Sprintf("#%d", a.Number)), Message: msg, URL: a.URL})
	}
	sort.SliceStable(fs, func(i, j int) bool { return rankOf(fs[i].Severity) > rankOf(fs[j].Severity) })
	at := fmt.Sprintf("%s at %s", s.CodeRepository(), short(s.GitRevision))
	if scan.Newest != "" && !strings.EqualFold(scan.Newest, s.GitRevision) {
		at = fmt.Sprintf("%s on %s as of its newest analysis, of commit %s, not of the release's commit %s "+
			"(GitHub lists a ref's alerts as of its newest analysis only)",
			s.CodeRepository(), scan.Ref, short(scan.Newest), short(s.GitRevision))
	}
	if len(fs) > 0 {
		return Failed(fmt.Sprintf("%d open code-scanning alert(s) at or above %s in %s", len(fs), threshold, at), fs...)
	}
	return Passed(fmt.Sprintf("no open code-scanning alert at or above %s in %s (%d below)", threshold, at, below))
}

func rankOf(level string) int {
	_, r := Alert{SecuritySeverity: level, Severity: level}.Level()
	return r
}
