package attest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/ripcord/ripcord/gates"
)

// severityRank orders scanner severities. Anything a scanner calls
// otherwise (UNKNOWN, unspecified) ranks as critical: fail closed, and let
// the allow-list name it when it is known to be harmless.
var severityRank = map[string]int{"negligible": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}

func rank(sev string) int {
	if r, ok := severityRank[strings.ToLower(sev)]; ok {
		return r
	}
	return 4
}

// vuln is one vulnerability a scan reported.
type vuln struct {
	ID, Severity, Package, URL string
}

// vulnPredicate is cosign's vuln predicate; scanner.result holds the
// scanner's own JSON, read in Trivy's or Grype's form.
type vulnPredicate struct {
	Scanner struct {
		URI    string          `json:"uri"`
		Result json.RawMessage `json:"result"`
	} `json:"scanner"`
}

type trivyResult struct {
	Results *[]struct {
		Vulnerabilities []struct {
			VulnerabilityID, PkgName, Severity, PrimaryURL string
		}
	}
}

type grypeResult struct {
	Matches *[]struct {
		Vulnerability struct {
			ID         string `json:"id"`
			Severity   string `json:"severity"`
			DataSource string `json:"dataSource"`
		} `json:"vulnerability"`
		Artifact struct {
			Name string `json:"name"`
		} `json:"artifact"`
	} `json:"matches"`
}

// vulnsOf reads the vulnerabilities of one vuln predicate.
func vulnsOf(pred json.RawMessage) ([]vuln, error) {
	var p vulnPredicate
	if err := json.Unmarshal(pred, &p); err != nil {
		return nil, fmt.Errorf("vuln predicate is not JSON: %w", err)
	}
	var t trivyResult
	if json.Unmarshal(p.Scanner.Result, &t) == nil && t.Results != nil {
		var out []vuln
		for _, r := range *t.Results {
			for _, v := range r.Vulnerabilities {
				out = append(out, vuln{ID: v.VulnerabilityID, Severity: v.Severity, Package: v.PkgName, URL: v.PrimaryURL})
			}
		}
		return out, nil
	}
	var g grypeResult
	if json.Unmarshal(p.Scanner.Result, &g) == nil && g.Matches != nil {
		var out []vuln
		for _, m := range *g.Matches {
			out = append(out, vuln{ID: m.Vulnerability.ID, Severity: m.Vulnerability.Severity, Package: m.Artifact.Name, URL: m.Vulnerability.DataSource})
		}
		return out, nil
	}
	return nil, fmt.Errorf("scanner.result of %s is in neither Trivy (Results) nor Grype (matches) form", orUnchecked(p.Scanner.URI))
}

// JudgeScan passes a digest whose verified vulnerability attestations
// report nothing at or above threshold outside allow. Every vuln
// attestation counts: a later scan does not hide an earlier finding.
func JudgeScan(r Report, threshold string, allow []string) gates.Verdict {
	min, ok := severityRank[strings.ToLower(threshold)]
	if !ok || min == 0 {
		return gates.Errored(fmt.Sprintf("gates.image_scan.severity: %q is not critical, high, medium or low", threshold))
	}
	scans := r.of(PredicateVuln)
	if len(scans) == 0 {
		why := r.AttestationProblem
		if why == "" {
			why = "the verified attestations are of other predicate types"
		}
		return gates.Failed(fmt.Sprintf("%s has no verified vulnerability scan attestation: %s", r.Image, why))
	}
	allowed := map[string]bool{}
	for _, id := range allow {
		allowed[strings.ToUpper(id)] = true
	}
	seen := map[string]bool{}
	var fs []gates.Finding
	waived := 0
	for _, s := range scans {
		vs, err := vulnsOf(s.Predicate)
		if err != nil {
			return gates.Errored(err.Error())
		}
		for _, v := range vs {
			if rank(v.Severity) < min || seen[v.ID+" "+v.Package] {
				continue
			}
			seen[v.ID+" "+v.Package] = true
			if allowed[strings.ToUpper(v.ID)] {
				waived++
				continue
			}
			fs = append(fs, gates.Finding{Severity: strings.ToLower(v.Severity), ID: v.ID, Message: "in " + orUnchecked(v.Package), URL: v.URL})
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return rank(fs[i].Severity) > rank(fs[j].Severity) })
	if len(fs) > 0 {
		return gates.Failed(fmt.Sprintf("%d vulnerabilit%s at or above %s in %s", len(fs), plural(len(fs)), threshold, r.Image), fs...)
	}
	return gates.Passed(fmt.Sprintf("no vulnerability at or above %s in %s (%d scan(s); %d allowed by gates.image_scan.allow)", threshold, r.Image, len(scans), waived))
}

func plural(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}
