package githubtest

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// CodeScanningAlert is one code-scanning alert the fake lists.
type CodeScanningAlert struct {
	Number           int
	State            string // open (default), dismissed, fixed
	RuleID           string
	Severity         string // rule.severity: none, note, warning, error
	SecuritySeverity string // rule.security_severity_level: low, medium, high, critical; empty: none
	Description      string
	Tool             string // default CodeQL
	Path             string
	Line             int
}

// CodeScanning serves GET /repos/{owner}/{repo}/code-scanning/alerts from
// the alerts a test adds, by ref. A ref nobody analyzed answers 404 "no
// analysis found", as GitHub does.
type CodeScanning struct {
	s      *Server
	mu     sync.Mutex
	byRef  map[string][]CodeScanningAlert // "owner/repo ref", repo lower-cased
	number int
	// analyses are the commits analysed, newest last, by lower-cased repo.
	analyses map[string][]codeScanningAnalysis
}

type codeScanningAnalysis struct{ ref, sha string }

// ServeCodeScanning registers the code-scanning alerts operation on s.
func ServeCodeScanning(s *Server) *CodeScanning {
	c := &CodeScanning{s: s, byRef: map[string][]CodeScanningAlert{}, analyses: map[string][]codeScanningAnalysis{}}
	s.Handle("GET /repos/{owner}/{repo}/code-scanning/alerts", c.list)
	s.Handle("GET /repos/{owner}/{repo}/code-scanning/analyses", c.listAnalyses)
	return c
}

// AnalyzedCommit records that commit sha of repo was analysed on ref; the
// alerts of ref are those given to Analyzed.
func (c *CodeScanning) AnalyzedCommit(repo, ref, sha string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.analyses[repoKey(repo)] = append(c.analyses[repoKey(repo)], codeScanningAnalysis{ref: ref, sha: sha})
}

// listAnalyses answers newest first, as GitHub does.
func (c *CodeScanning) listAnalyses(w http.ResponseWriter, r *http.Request, p map[string]string) {
	repo := p["owner"] + "/" + p["repo"]
	c.mu.Lock()
	list := c.analyses[repoKey(repo)]
	c.mu.Unlock()
	out := []map[string]any{}
	for i := len(list) - 1; i >= 0; i-- {
		a := list[i]
		id := i + 1
		out = append(out, map[string]any{
			"ref": a.ref, "commit_sha": a.sha, "analysis_key": ".github/workflows/codeql.yml:analyze", "environment": "{}",
			"error": "", "created_at": time.Date(2026, 11, 1, 0, 0, id, 0, time.UTC).Format(time.RFC3339),
			"results_count": 0, "rules_count": 10, "id": id, "url": c.s.apiURL("repos/%s/code-scanning/analyses/%d", repo, id),
			"sarif_id": fmt.Sprintf("sarif-%d", id), "tool": map[string]any{"name": "CodeQL", "version": "2.19.0", "guid": nil},
			"deletable": true, "warning": "",
		})
	}
	writeJSON(w, http.StatusOK, paginate(w, r, out))
}

// Analyzed records an analysis of ref in repo with the given alerts (none: a clean analysis).
func (c *CodeScanning) Analyzed(repo, ref string, alerts ...CodeScanningAlert) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := repoKey(repo) + " " + ref
	list := c.byRef[key]
	for _, a := range alerts {
		c.number++
		if a.Number == 0 {
			a.Number = c.number
		}
		list = append(list, a)
	}
	if list == nil {
		list = []CodeScanningAlert{}
	}
	c.byRef[key] = list
}

func (c *CodeScanning) list(w http.ResponseWriter, r *http.Request, p map[string]string) {
	repo := p["owner"] + "/" + p["repo"]
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = "refs/heads/main"
	}
	state := r.URL.Query().Get("state")
	c.mu.Lock()
	alerts, ok := c.byRef[repoKey(repo)+" "+ref]
	if !ok {
		alerts, ok = c.byRef[repoKey(repo)+" "+strings.TrimPrefix(ref, "refs/heads/")]
	}
	c.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "no analysis found")
		return
	}
	out := []map[string]any{}
	for _, a := range alerts {
		if a.State == "" {
			a.State = "open"
		}
		if state != "" && a.State != state {
			continue
		}
		out = append(out, c.alertJSON(repo, ref, a))
	}
	writeJSON(w, http.StatusOK, paginate(w, r, out))
}

func (c *CodeScanning) alertJSON(repo, ref string, a CodeScanningAlert) map[string]any {
	tool := a.Tool
	if tool == "" {
		tool = "CodeQL"
	}
	var sec any
	if a.SecuritySeverity != "" {
		sec = a.SecuritySeverity
	}
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	url := c.s.apiURL("repos/%s/code-scanning/alerts/%d", repo, a.Number)
	return map[string]any{
		"number": a.Number, "created_at": created, "url": url, "html_url": htmlURL("%s/security/code-scanning/%d", repo, a.Number),
		"instances_url": url + "/instances", "state": a.State, "dismissed_by": nil, "dismissed_at": nil, "dismissed_reason": nil,
		"rule": map[string]any{"id": a.RuleID, "name": a.RuleID, "severity": a.Severity, "security_severity_level": sec, "description": a.Description},
		"tool": map[string]any{"name": tool, "version": "2.19.0", "guid": nil},
		"most_recent_instance": map[string]any{
			"ref": ref, "state": a.State, "commit_sha": fmt.Sprintf("%040d", a.Number),
			"location": map[string]any{"path": a.Path, "start_line": a.Line, "end_line": a.Line, "start_column": 1, "end_column": 1},
		},
	}
}
