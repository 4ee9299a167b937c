package actions

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
)

// outcomes of a run that could not post, by fail-on-error.
var failModes = []struct {
	failOnError string
	code        int
	kind        string
}{
	{"false", 0, "warning"}, // a ripcord outage never fails a deploy
	{"true", 1, "error"},
}

// checkFailed asserts the run ended as fail-on-error says, with a message
// that contains every one of want.
func checkFailed(t *testing.T, r run, code int, kind string, want ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	msg, ok := annotation(r.stdout, kind)
	if !ok {
		t.Fatalf("no ::%s:: in stdout:\n%s", kind, r.stdout)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("::%s:: message %q does not mention %q", kind, msg, w)
		}
	}
	if r.outputs != "" {
		t.Errorf("outputs were set by a failed post: %q", r.outputs)
	}
}

func TestRetriesA503ThenSucceeds(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	f.facts.script(reply{503, "busy"}, reply{502, "bad gateway"}, reply{200, answer})
	f.token.script(reply{500, "token service hiccup"}, reply{200, `{"value":"` + oidcToken + `"}`})
	r := runAction(t, f, baseInputs(f), nil)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := len(f.token.got()); n != 2 {
		t.Errorf("token endpoint got %d requests, want 2 (a 500 is retried)", n)
	}
	posts := f.facts.got()
	if len(posts) != 3 {
		t.Fatalf("ripcord got %d posts, want 3 (503, 502, then 200)", len(posts))
	}
	if string(posts[0].Body) != string(posts[2].Body) {
		t.Errorf("a retry posted a different fact:\n%s\n%s", posts[0].Body, posts[2].Body)
	}
	if !strings.Contains(r.outputs, "fact-id=9c1f0e\n") {
		t.Errorf("outputs = %q, want fact-id from the final answer", r.outputs)
	}
}

func TestGivesUpAfterThreeAttempts(t *testing.T) {
	t.Parallel()
	for _, m := range failModes {
		t.Run("fail-on-error="+m.failOnError, func(t *testing.T) {
			f := newFakes(t)
			f.facts.script(reply{503, "ripcord is down for maintenance"})
			r := runAction(t, f, with(baseInputs(f), "fail-on-error", m.failOnError), nil)
			if n := len(f.facts.got()); n != 3 {
				t.Errorf("ripcord got %d posts, want 3 attempts", n)
			}
			checkFailed(t, r, m.code, m.kind, "HTTP 503", "ripcord is down for maintenance", "3 attempt")
		})
	}
}

func TestRipcordUnreachableIsRetriedThenReported(t *testing.T) {
	t.Parallel()
	for _, m := range failModes {
		t.Run("fail-on-error="+m.failOnError, func(t *testing.T) {
			f := newFakes(t)
			f.rcServer.Close() // connection refused, while the token endpoint works
			r := runAction(t, f, with(baseInputs(f), "fail-on-error", m.failOnError), nil)
			for _, n := range []string{"attempt 1 failed", "attempt 2 failed"} {
				if !strings.Contains(r.stdout, n) {
					t.Errorf("stdout does not say %q:\n%s", n, r.stdout)
				}
			}
			checkFailed(t, r, m.code, m.kind, "after 3 attempt(s)")
		})
	}
}

// ripcord's refusal is shown by its error and field on one line, not as
// the pretty-printed JSON with its escapes; an answer that is not
// ripcord's JSON (a proxy's page) is shown as it came.
func TestA400IsNotRetriedAndItsBodyIsShown(t *testing.T) {
	t.Parallel()
	// The body as ripcord's API writes it: indented, with Go's escapes.
	rec := httptest.NewRecorder()
	pipeline.WriteError(rec, http.StatusBadRequest, "release_id", `release_id: "c1" is not <app>:<cluster>/<environment>`)
	ripcord := rec.Body.String()
	if !strings.Contains(ripcord, `\u003capp\u003e`) || !strings.Contains(ripcord, "\n  ") {
		t.Fatalf("ripcord's error body %q is no longer indented and escaped: make this test's point another way", ripcord)
	}
	proxy := "<html>\n<h1>400 Bad Request</h1>\n</html>"
	cases := []struct {
		name, body string
		want       []string
		not        string
	}{
		{"ripcord's JSON error", ripcord,
			[]string{`HTTP 400: release_id: "c1" is not <app>:<cluster>/<environment> (field release_id)`}, `\"`},
		{"ripcord's JSON error without a field", `{"error": "fact: not valid JSON"}`,
			[]string{`HTTP 400: fact: not valid JSON. `}, "(field"},
		{"not ripcord's JSON", proxy, []string{"HTTP 400: " + proxy}, ""},
	}
	for _, tc := range cases {
		for _, m := range failModes {
			t.Run(tc.name+"/fail-on-error="+m.failOnError, func(t *testing.T) {
				f := newFakes(t)
				f.facts.script(reply{400, tc.body})
				r := runAction(t, f, with(baseInputs(f), "fail-on-error", m.failOnError), nil)
				if n := len(f.facts.got()); n != 1 {
					t.Errorf("ripcord got %d posts, want 1: a 400 gets the same answer every time", n)
				}
				checkFailed(t, r, m.code, m.kind, append(tc.want, "1 attempt")...)
				if msg, _ := annotation(r.stdout, m.kind); tc.not != "" && strings.Contains(msg, tc.not) {
					t.Errorf("::%s:: message %q still shows %q", m.kind, msg, tc.not)
				}
			})
		}
	}
}

// fail-on-error is true or false in any case; anything else is taken as
// false (a failed post warns and the deploy goes on), and said.
func TestFailOnErrorValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		code  int
		kind  string
		warn  bool
	}{
		{"true", 1, "error", false},
		{"True", 1, "error", false},
		{"TRUE", 1, "error", false},
		{"tRuE", 1, "error", false},
		{"false", 0, "warning", false},
		{"FALSE", 0, "warning", false},
		{"", 0, "warning", false},
		{"yes", 0, "warning", true},
		{"1", 0, "warning", true},
		{"TRUE ", 0, "warning", true},
	} {
		t.Run(tc.value, func(t *testing.T) {
			f := newFakes(t)
			f.facts.script(reply{503, "down"})
			r := runAction(t, f, with(baseInputs(f), "fail-on-error", tc.value), nil)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s", r.code, tc.code, r.stdout)
			}
			var warned, failed bool
			for _, line := range strings.Split(r.stdout, "\n") {
				warned = warned || strings.Contains(line, `input fail-on-error must be true or false, got "`+tc.value+`": taking false`)
				failed = failed || strings.HasPrefix(line, "::"+tc.kind+" title=ripcord::") && strings.Contains(line, "HTTP 503")
			}
			if warned != tc.warn {
				t.Errorf("warned about the value: %v, want %v\n%s", warned, tc.warn, r.stdout)
			}
			if !failed {
				t.Errorf("the failed post is not a ::%s::\n%s", tc.kind, r.stdout)
			}
		})
	}
}

func TestMissingIDTokenPermission(t *testing.T) {
	t.Parallel()
	for _, m := range failModes {
		for _, unset := range []string{"ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"} {
			t.Run(unset+"/fail-on-error="+m.failOnError, func(t *testing.T) {
				f := newFakes(t)
				r := runAction(t, f, with(baseInputs(f), "fail-on-error", m.failOnError), map[string]string{unset: "-"})
				checkFailed(t, r, m.code, m.kind, unset+" is not set", "the job needs `permissions: id-token: write`",
					"a job's own permissions block replaces the workflow's", "pull requests from forks")
				if n := len(f.token.got()) + len(f.facts.got()); n != 0 {
					t.Errorf("%d requests were made without a token", n)
				}
			})
		}
	}
}

func TestInvalidInputsAreRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		inputs []string
		job    map[string]string
		want   string
	}{
		{"job.status spelling is not a fact status", []string{"status", "failure"}, nil, `status must be in_progress, success, failed or cancelled, got "failure"`},
		{"empty status", []string{"status", ""}, nil, "status must be"},
		{"server without scheme", []string{"server", "ripcord.example.com"}, nil, "server must be an http(s) URL"},
		{"server with another scheme", []string{"server", "ftp://ripcord.example.com"}, nil, "server must be an http(s) URL"},
		{"server with a space in it", []string{"server", "https://ripcord.example.com /x"}, nil, "server must be an http(s) URL"},
		{"no release id", []string{"release-id", ""}, nil, "input release-id is required"},
		{"no app", []string{"app", ""}, nil, "input app is required"},
		{"no environment", []string{"environment", ""}, nil, "input environment is required"},
		{"failure type on a success", []string{"failure-type", "build_failure"}, nil, "only meaningful with status failed"},
		{"timeout that is not a number", []string{"timeout", "10s"}, nil, `timeout must be a whole number of seconds, got "10s"`},
		{"a negative timeout", []string{"timeout", "-5"}, nil, `timeout must be a whole number of seconds, got "-5"`},
		{"outside GitHub Actions", nil, map[string]string{"GITHUB_RUN_ID": "-"}, "GITHUB_RUN_ID"},
		{"run attempt that is not a number", nil, map[string]string{"GITHUB_RUN_ATTEMPT": "two"}, "GITHUB_RUN_ATTEMPT"},
	}
	for _, tc := range cases {
		for _, m := range failModes {
			t.Run(tc.name+"/fail-on-error="+m.failOnError, func(t *testing.T) {
				f := newFakes(t)
				in := with(with(baseInputs(f), tc.inputs...), "fail-on-error", m.failOnError)
				r := runAction(t, f, in, tc.job)
				checkFailed(t, r, m.code, m.kind, tc.want)
				if n := len(f.token.got()) + len(f.facts.got()); n != 0 {
					t.Errorf("%d requests were made with invalid input", n)
				}
			})
		}
	}
}

func TestFailedStatusWithFailureType(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	r := runAction(t, f, with(baseInputs(f), "status", "failed", "failure-type", "deploy_failure"), nil)
	if r.code != 0 || len(f.facts.got()) != 1 {
		t.Fatalf("exit %d, %d posts\n%s", r.code, len(f.facts.got()), r.stdout)
	}
	fact := decodeFact(t, f.facts.got()[0].Body)
	if fact.Status != "failed" || fact.FailureType != "deploy_failure" {
		t.Errorf("status %q failure_type %q, want failed / deploy_failure", fact.Status, fact.FailureType)
	}
}

// A workflow author who gets the server input wrong, or whose ripcord is
// down, is told what to do about it, and with fail-on-error false the deploy
// goes on.
func TestFailedPostSaysWhatToDo(t *testing.T) {
	t.Parallel()
	redirect := httptest.NewServer(http.RedirectHandler("https://ripcord.example.com/api/v1/facts", http.StatusPermanentRedirect))
	t.Cleanup(redirect.Close)
	cases := []struct {
		name   string
		answer reply
		server func(f *fakes) string
		want   []string
	}{
		{"ripcord is down", reply{503, "upstream unavailable"}, nil,
			[]string{"HTTP 503", "down or failing and did not record the fact", "its log"}},
		{"a path that is not ripcord's API", reply{404, "404 page not found"}, nil,
			[]string{"HTTP 404", "is not ripcord's facts API", "set input server to ripcord's public_url"}},
		{"a URL that redirects", reply{}, func(*fakes) string { return redirect.URL },
			[]string{"HTTP 308", "redirects to https://ripcord.example.com/api/v1/facts", "set input server to ripcord's public_url"}},
		{"nothing listening", reply{}, func(f *fakes) string { f.rcServer.Close(); return f.rcURL },
			[]string{"No answer from", "check that input server is ripcord's public_url", "can reach it"}},
		{"a token for another audience", reply{401, `{"error":"OIDC token refused: wrong audience"}`}, nil,
			[]string{"HTTP 401", `requested for audience "https://elsewhere.example.com"`, "must be ripcord's oidc.audience"}},
		{"a web site that takes any POST", reply{200, "<html>\n<body>Welcome</body>\n</html>"}, nil,
			[]string{"HTTP 200 without a fact id", "not ripcord and nothing was recorded", "<body>Welcome</body>", "Set input server to ripcord's public_url"}},
	}
	for _, tc := range cases {
		for _, m := range failModes {
			t.Run(tc.name+"/fail-on-error="+m.failOnError, func(t *testing.T) {
				f := newFakes(t)
				in := with(baseInputs(f), "fail-on-error", m.failOnError)
				if tc.answer.status != 0 {
					f.facts.script(tc.answer)
				}
				if tc.server != nil {
					in["server"] = tc.server(f)
				}
				if tc.answer.status == 401 {
					in["audience"] = "https://elsewhere.example.com"
				}
				r := runAction(t, f, in, nil)
				checkFailed(t, r, m.code, m.kind, tc.want...)
			})
		}
	}
}

// A server's answer is shown on one log line: a line of it that began with
// :: would be taken by the runner as a workflow command.
func TestAnswersCannotInjectWorkflowCommands(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	f.facts.script(reply{502, "bad gateway\n::error::injected\r\n::add-mask::x"}, reply{200, answer})
	r := runAction(t, f, baseInputs(f), nil)
	if r.code != 0 || len(f.facts.got()) != 2 {
		t.Fatalf("exit %d, %d posts\n%s", r.code, len(f.facts.got()), r.stdout)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "::error::") || strings.HasPrefix(line, "::add-mask::x") {
			t.Errorf("the answer's text became a workflow command: %q\nstdout:\n%s", line, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "attempt 1 failed (HTTP 502: bad gateway ::error::injected  ::add-mask::x)") {
		t.Errorf("the failed attempt is not reported on one line:\n%s", r.stdout)
	}
}

// A ripcord that takes the connection but never answers holds the job for
// the documented bound only: each attempt ends after timeout seconds.
func TestASilentRipcordHoldsTheJobBoundedly(t *testing.T) {
	t.Parallel()
	var posts atomic.Int32
	stop := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		_, _ = io.Copy(io.Discard, r.Body) // so a closed connection cancels r.Context()
		select {
		case <-r.Context().Done(): // curl gave up
		case <-stop:
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(stop) }) // runs first: Close waits for handlers
	f := newFakes(t)
	start := time.Now()
	r := runAction(t, f, with(baseInputs(f), "server", silent.URL, "timeout", "1"), nil)
	took := time.Since(start)
	checkFailed(t, r, 0, "warning", "after 3 attempt(s)", "No answer from "+silent.URL)
	if n := posts.Load(); n != 3 {
		t.Errorf("ripcord got %d posts, want 3", n)
	}
	// 6 × timeout + the waits (0 here) is the documented bound; the rest
	// is slack for a loaded machine, far below the harness's hang guard.
	if limit := 6*time.Second + 20*time.Second; took > limit {
		t.Errorf("the step took %s with timeout 1, want under %s", took, limit)
	}
}

// A server older than the cancelled status refuses it as it refuses any
// unknown status: 400 on field status. That is no fault of the deploy or
// of the inputs, so the step says to upgrade the server instead of only
// quoting the refusal; a 400 on another field is shown as any refusal.
func TestCancelledRefusedByAnOlderServerSaysToUpgradeIt(t *testing.T) {
	t.Parallel()
	old := httptest.NewRecorder() // the answer as a server before the status wrote it
	pipeline.WriteError(old, http.StatusBadRequest, "status", `status: must be in_progress, success or failed, got "cancelled"`)
	other := httptest.NewRecorder()
	pipeline.WriteError(other, http.StatusBadRequest, "app", "app: is required")
	for _, m := range failModes {
		t.Run("older server/fail-on-error="+m.failOnError, func(t *testing.T) {
			f := newFakes(t)
			f.facts.script(reply{400, old.Body.String()})
			r := runAction(t, f, with(baseInputs(f), "status", "cancelled", "fail-on-error", m.failOnError), nil)
			if n := len(f.facts.got()); n != 1 {
				t.Errorf("ripcord got %d posts, want 1", n)
			}
			checkFailed(t, r, m.code, m.kind, "does not know status cancelled", "upgrade the server",
				"release c1:prod-eu/prod stays as its last fact left it", `got "cancelled" (field status)`)
		})
	}
	t.Run("another refusal of a cancelled fact", func(t *testing.T) {
		f := newFakes(t)
		f.facts.script(reply{400, other.Body.String()})
		r := runAction(t, f, with(baseInputs(f), "status", "cancelled"), nil)
		checkFailed(t, r, 0, "warning", "app: is required (field app)", "ripcord's answer above says what it refused")
		if msg, _ := annotation(r.stdout, "warning"); strings.Contains(msg, "upgrade") {
			t.Errorf("a refusal on field app says to upgrade the server: %q", msg)
		}
	})
}
