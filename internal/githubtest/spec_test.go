package githubtest

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func request(t *testing.T, method, target, body string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, "http://127.0.0.1:1"+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

func TestValidate(t *testing.T) {
	spec := LoadSpec(t)
	cases := []struct {
		name, method, target, body string
		wantErr                    string // a part of the error; empty for a valid request
	}{
		{"re-run of failed jobs", "POST", "/repos/acme/shop/actions/runs/30433642/rerun-failed-jobs", "", ""},
		{"re-run with debug logging", "POST", "/repos/acme/shop/actions/runs/1/rerun", `{"enable_debug_logging":true}`, ""},
		{"a re-run path GitHub does not have", "POST", "/repos/acme/shop/actions/runs/1/rerun-all", "", "GitHub has no operation POST"},
		{"a method the path does not take", "PUT", "/repos/acme/shop/actions/runs/1/rerun", "", "that path takes POST"},
		{"a run id that is not a number", "POST", "/repos/acme/shop/actions/runs/abc/rerun", "", `parameter "run_id"`},
		{"check run completed with a bad conclusion", "POST", "/repos/acme/shop/check-runs",
			`{"name":"ripcord/provenance","head_sha":"abc","status":"completed","conclusion":"passed"}`, `field "conclusion"`},
		{"check run created without status (discriminator without mapping)", "POST", "/repos/acme/shop/check-runs",
			`{"name":"ripcord/provenance","head_sha":"abc"}`, ""},
		{"check run completed without conclusion", "POST", "/repos/acme/shop/check-runs",
			`{"name":"ripcord/provenance","head_sha":"abc","status":"completed"}`, `property "conclusion" is missing`},
		{"check run without a name", "POST", "/repos/acme/shop/check-runs", `{"head_sha":"abc"}`, `field "name"`},
		{"check run started_at that is not a date-time", "POST", "/repos/acme/shop/check-runs",
			`{"name":"n","head_sha":"abc","started_at":"yesterday"}`, `field "started_at"`},
		{"check run update with a bad status", "PATCH", "/repos/acme/shop/check-runs/5", `{"status":"done"}`, `"status"`},
		{"labels as a bare array, as go-github sends them", "POST", "/repos/acme/shop/issues/3/labels", `["rollback","ripcord"]`, ""},
		{"labels as an object", "POST", "/repos/acme/shop/issues/3/labels", `{"labels":["rollback"]}`, ""},
		{"labels as a number", "POST", "/repos/acme/shop/issues/3/labels", `{"labels":5}`, "body"},
		{"a bare array where GitHub wants an object", "POST", "/repos/acme/shop/pulls", `["x"]`, "body"},
		{"pull request without head", "POST", "/repos/acme/shop/pulls", `{"title":"Rollback: x","base":"main"}`, `field "head"`},
		{"pull request list with a bad state", "GET", "/repos/acme/shop/pulls?state=merged", "", `query parameter "state"`},
		{"a misspelt query parameter", "GET", "/repos/acme/shop/pulls?sate=open", "", `query parameter "sate" is not one`},
		{"pull request list by head and base", "GET", "/repos/acme/shop/pulls?head=acme:release-rollback-prod-0123abcd&base=main&state=all", "", ""},
		{"nested contents path", "GET", "/repos/acme/gitops/contents/apps/checkout/prod/release.yaml?ref=main", "", ""},
		{"git ref of a branch with a slash", "GET", "/repos/acme/shop/git/ref/heads/feature/x", "", ""},
		{"update of a ref with a slash", "PATCH", "/repos/acme/shop/git/refs/heads/feature/x", `{"sha":"abc","force":false}`, ""},
		{"ref update without sha", "PATCH", "/repos/acme/shop/git/refs/heads/main", `{"force":true}`, `field "sha"`},
		{"tree entry with a mode git does not have", "POST", "/repos/acme/shop/git/trees",
			`{"tree":[{"path":"a","mode":"100664","type":"blob","content":"x"}]}`, `field "tree.0.mode"`},
		{"tree entry deleting a path", "POST", "/repos/acme/shop/git/trees",
			`{"base_tree":"abc","tree":[{"path":"a","mode":"100644","type":"blob","sha":null}]}`, ""},
		{"workflow dispatch asking for the run's details", "POST", "/repos/acme/shop/actions/workflows/deploy.yml/dispatches",
			`{"ref":"main","inputs":{"version":"v1.2.3"},"return_run_details":true}`, ""},
		{"workflow dispatch without ref", "POST", "/repos/acme/shop/actions/workflows/deploy.yml/dispatches", `{"inputs":{}}`, `field "ref"`},
		{"a body on an operation that takes none", "GET", "/repos/acme/shop/pulls/1", `{"x":1}`, "request body"},
		{"gate review approving", "POST", "/repos/acme/shop/actions/runs/7/deployment_protection_rule",
			`{"environment_name":"prod","state":"approved","comment":"no freeze"}`, ""},
		{"gate review with a state GitHub does not know", "POST", "/repos/acme/shop/actions/runs/7/deployment_protection_rule",
			`{"environment_name":"prod","state":"ok"}`, "body"},
		{"GitHub Enterprise's /api/v3 prefix", "GET", "/api/v3/repos/acme/shop", "", ""},
		{"an optional body sent as null, as ghinstallation does", "POST", "/app/installations/1/access_tokens", "null", ""},
		{"a required body sent as null", "POST", "/repos/acme/shop/check-runs", "null", "body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := spec.Validate(request(t, c.method, c.target, c.body), []byte(c.body))
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("valid request rejected: %v", err)
			case c.wantErr != "" && err == nil:
				t.Errorf("invalid request accepted; want an error naming %s", c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Errorf("error %q does not name %s", err, c.wantErr)
			}
		})
	}
}

func TestValidationErrorNamesTheOperation(t *testing.T) {
	spec := LoadSpec(t)
	body := `{"name":"n","head_sha":"abc","conclusion":"passed"}`
	err := spec.Validate(request(t, "POST", "/repos/acme/shop/check-runs", body), []byte(body))
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	if verr.OperationID != "checks/create" || verr.Template != "/repos/{owner}/{repo}/check-runs" {
		t.Errorf("operation = %q %q, want checks/create /repos/{owner}/{repo}/check-runs", verr.OperationID, verr.Template)
	}
	if len(verr.Problems) != 1 || !strings.Contains(verr.Problems[0], "conclusion") {
		t.Errorf("problems = %q, want one about conclusion", verr.Problems)
	}
}

func TestMatch(t *testing.T) {
	spec := LoadSpec(t)
	cases := []struct {
		name, method, path, template string
		params                       map[string]string
	}{
		{"contents with a nested path", "GET", "/repos/acme/gitops/contents/apps/checkout/prod/release.yaml",
			"/repos/{owner}/{repo}/contents/{path}", map[string]string{"path": "apps/checkout/prod/release.yaml"}},
		{"git/ref with a branch holding slashes", "GET", "/repos/acme/shop/git/ref/heads/feature/x",
			"/repos/{owner}/{repo}/git/ref/{ref}", map[string]string{"ref": "heads/feature/x"}},
		{"an escaped segment is unescaped", "GET", "/repos/acme/shop/git/ref/heads/feat/a%20b",
			"/repos/{owner}/{repo}/git/ref/{ref}", map[string]string{"ref": "heads/feat/a b"}},
		{"literal pulls/comments beats pulls/{pull_number}", "GET", "/repos/acme/shop/pulls/comments",
			"/repos/{owner}/{repo}/pulls/comments", map[string]string{"owner": "acme"}},
		{"commits/{ref}/status beats a multi-segment commits/{ref}", "GET", "/repos/acme/shop/commits/main/status",
			"/repos/{owner}/{repo}/commits/{ref}/status", map[string]string{"ref": "main"}},
		{"commits/{ref} takes a branch with a slash", "GET", "/repos/acme/shop/commits/release/v2",
			"/repos/{owner}/{repo}/commits/{ref}", map[string]string{"ref": "release/v2"}},
		{"multi-segment is per operation: DELETE git/refs/{ref}", "DELETE", "/repos/acme/shop/git/refs/tags/v1/rc",
			"/repos/{owner}/{repo}/git/refs/{ref}", map[string]string{"ref": "tags/v1/rc"}},
		{"a branch holding slashes before a literal", "GET", "/repos/acme/shop/branches/release/v2/protection",
			"/repos/{owner}/{repo}/branches/{branch}/protection", map[string]string{"branch": "release/v2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := spec.Match(c.method, c.path)
			if err != nil {
				t.Fatalf("Match: %v", err)
			}
			if m.Template != c.template {
				t.Errorf("template = %s, want %s", m.Template, c.template)
			}
			for k, v := range c.params {
				if m.Params[k] != v {
					t.Errorf("param %s = %q, want %q", k, m.Params[k], v)
				}
			}
		})
	}
}

func TestSingleSegmentParametersStayInTheirSegment(t *testing.T) {
	spec := LoadSpec(t)
	if m, err := spec.Match("GET", "/repos/acme/shop/pulls/1/extra"); err == nil {
		t.Errorf("/pulls/1/extra routed to %s %v; pull_number spans one segment", m.Template, m.Params)
	}
}

// Every template GitHub marks x-multi-segment must take a value with a slash in it.
func TestEveryMultiSegmentTemplateRoutes(t *testing.T) {
	spec := LoadSpec(t)
	param := regexp.MustCompile(`\{([^}]+)\}`)
	templates := map[string]bool{}
	for _, routes := range spec.router.byMethod {
		for _, rt := range routes {
			multi := multiSegmentParams(rt.item, rt.op)
			if len(multi) == 0 {
				continue
			}
			templates[rt.template] = true
			path := param.ReplaceAllStringFunc(rt.template, func(p string) string {
				if multi[p[1:len(p)-1]] {
					return "a/b"
				}
				return "1"
			})
			m, err := spec.Match(rt.method, path)
			if err != nil {
				t.Errorf("%s %s (from %s): %v", rt.method, path, rt.template, err)
				continue
			}
			if m.Template != rt.template {
				t.Errorf("%s %s routed to %s, want %s", rt.method, path, m.Template, rt.template)
			}
		}
	}
	if len(templates) != 39 {
		t.Errorf("%d multi-segment templates, GitHub marks 39", len(templates))
	}
}

func BenchmarkLoadSpec(b *testing.B) {
	file := SharedDir(b) + "/github/openapi/api.github.com.json"
	for b.Loop() {
		if _, err := loadSpecFile(file); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	spec := LoadSpec(b)
	body := `{"name":"ripcord/provenance","head_sha":"abc","status":"completed","conclusion":"success"}`
	for b.Loop() {
		r, _ := http.NewRequest("POST", "http://127.0.0.1:1/repos/acme/shop/check-runs", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if err := spec.Validate(r, []byte(body)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMatch resolves the requests an end-to-end scene makes most
// often against GitHub's thousand operations.
func BenchmarkMatch(b *testing.B) {
	spec := LoadSpec(b)
	reqs := [][2]string{
		{"GET", "/repos/acme/shop/pulls/12"},
		{"POST", "/repos/acme/shop/check-runs"},
		{"GET", "/repos/acme/gitops/contents/apps/checkout/prod/release.yaml"},
		{"POST", "/app/installations/7/access_tokens"},
		{"GET", "/repos/acme/shop/git/ref/heads/main"},
	}
	for b.Loop() {
		for _, r := range reqs {
			if _, err := spec.Match(r[0], r[1]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
