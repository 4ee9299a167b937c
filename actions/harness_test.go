package actions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	requestToken = "req-token-from-runner"
	oidcToken    = "eyJhbGciOiJSUzI1NiJ9.eyJyZXBvc2l0b3J5IjoiYWNtZS9jaGVja291dCJ9.c2ln"
	answer       = `{"id":"9c1f0e","outcome":"opened","release_id":"c1:prod-eu/prod","state":"opened"}`
)

// call is one request a fake endpoint received.
type call struct {
	Query         map[string][]string
	Authorization string
	ContentType   string
	Body          []byte
}

// endpoint is a fake HTTP endpoint that answers from a script of
// (status, body) pairs, repeating the last one, and records every call.
type endpoint struct {
	mu      sync.Mutex
	answers []reply
	calls   []call
}

type reply struct {
	status int
	body   string
}

func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.calls = append(e.calls, call{Query: r.URL.Query(), Authorization: r.Header.Get("Authorization"),
		ContentType: r.Header.Get("Content-Type"), Body: body})
	a := e.answers[min(len(e.calls), len(e.answers))-1]
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)
}

// script sets the answers. It locks because the race detector cannot see
// that the script's requests come after this call.
func (e *endpoint) script(answers ...reply) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answers = answers
}

func (e *endpoint) got() []call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]call(nil), e.calls...)
}

// fakes is GitHub's OIDC token endpoint and ripcord's facts endpoint, on
// loopback. They are separate servers so a test can take ripcord down
// while the token endpoint still works.
type fakes struct {
	token, facts    *endpoint
	tokenURL, rcURL string
	rcServer        *httptest.Server
}

func newFakes(t *testing.T) *fakes {
	t.Helper()
	f := &fakes{
		token: &endpoint{answers: []reply{{200, `{"count":1,"value":"` + oidcToken + `"}`}}},
		facts: &endpoint{answers: []reply{{200, answer}}},
	}
	gh := http.NewServeMux()
	gh.HandleFunc("GET /_apis/distributedtask/token", f.token.serve)
	ghServer := httptest.NewServer(gh)
	t.Cleanup(ghServer.Close)
	rc := http.NewServeMux()
	rc.HandleFunc("POST /api/v1/facts", f.facts.serve)
	f.rcServer = httptest.NewServer(rc)
	t.Cleanup(f.rcServer.Close)
	f.tokenURL = ghServer.URL + "/_apis/distributedtask/token?api-version=2.0"
	f.rcURL = f.rcServer.URL
	return f
}

// run is one run of the action's step.
type run struct {
	code    int
	stdout  string
	stderr  string
	outputs string
	temp    string
}

// runAction runs post-fact.sh as the runner would run action.yml's step:
// the step's env block is evaluated against inputs (defaults included),
// on top of a job environment (GITHUB_*, ACTIONS_ID_TOKEN_*) that job
// overrides; a job value of "-" unsets the variable.
func runAction(t *testing.T, f *fakes, inputs, job map[string]string) run {
	t.Helper()
	dir := t.TempDir()
	outFile := filepath.Join(dir, "github_output")
	temp := filepath.Join(dir, "runner_temp")
	if err := os.Mkdir(temp, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"PATH":                           os.Getenv("PATH"),
		"GITHUB_ACTIONS":                 "true",
		"GITHUB_REPOSITORY":              "acme/checkout",
		"GITHUB_RUN_ID":                  "12345678901",
		"GITHUB_RUN_ATTEMPT":             "2",
		"GITHUB_SHA":                     "4f9c2d1e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
		"GITHUB_ACTOR":                   "octocat",
		"GITHUB_REF":                     "refs/heads/main",
		"GITHUB_WORKFLOW":                "deploy",
		"GITHUB_JOB":                     "prod",
		"GITHUB_OUTPUT":                  outFile,
		"GITHUB_ACTION_PATH":             repoRoot(t),
		"RUNNER_TEMP":                    temp,
		"ACTIONS_ID_TOKEN_REQUEST_URL":   f.tokenURL,
		"ACTIONS_ID_TOKEN_REQUEST_TOKEN": requestToken,
		"RIPCORD_RETRY_DELAYS":           "0 0",
	}
	for k, v := range stepEnv(t, inputs) {
		env[k] = v
	}
	for k, v := range job {
		env[k] = v
		if v == "-" {
			delete(env, k)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a timing
	defer cancel()
	// As the runner runs a composite step with shell: bash.
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", stepRun(t))
	cmd.Env = nil
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("run post-fact.sh: %v", err)
	}
	outputs, _ := os.ReadFile(outFile)
	return run{code: code, stdout: stdout.String(), stderr: stderr.String(), outputs: string(outputs), temp: temp}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// actionYAML is action.yml's metadata schema (as GitHub documents it for a
// composite action), decoded strictly so a misspelt key fails the tests.
type actionYAML struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Author      string `yaml:"author"`
	Branding    struct {
		Icon  string `yaml:"icon"`
		Color string `yaml:"color"`
	} `yaml:"branding"`
	Inputs map[string]struct {
		Description string  `yaml:"description"`
		Required    bool    `yaml:"required"`
		Default     *string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID    string            `yaml:"id"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
			Run   string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

func loadAction(t *testing.T) actionYAML {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a actionYAML
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if len(a.Runs.Steps) != 1 {
		t.Fatalf("action.yml has %d steps, want the one that runs post-fact.sh", len(a.Runs.Steps))
	}
	return a
}

var inputExpr = regexp.MustCompile(`^\$\{\{\s*inputs\.([a-z-]+)\s*\}\}$`)

// stepEnv evaluates the step's env block the way the runner would: each
// ${{ inputs.x }} becomes the given input or its default.
func stepEnv(t *testing.T, inputs map[string]string) map[string]string {
	t.Helper()
	a := loadAction(t)
	for name := range inputs {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("test passes input %q, which action.yml does not declare", name)
		}
	}
	env := map[string]string{}
	for k, expr := range a.Runs.Steps[0].Env {
		m := inputExpr.FindStringSubmatch(expr)
		if m == nil {
			t.Fatalf("action.yml env %s = %q, want ${{ inputs.<name> }}", k, expr)
		}
		v, given := inputs[m[1]]
		if !given && a.Inputs[m[1]].Default != nil {
			v = *a.Inputs[m[1]].Default
		}
		env[k] = v
	}
	return env
}

func stepRun(t *testing.T) string {
	t.Helper()
	return loadAction(t).Runs.Steps[0].Run
}

// baseInputs are a deploy of checkout to prod that succeeded.
func baseInputs(f *fakes) map[string]string {
	return map[string]string{
		"server":      f.rcURL,
		"app":         "checkout",
		"environment": "prod",
		"cluster":     "prod-eu",
		"status":      "success",
		"image":       "ghcr.io/acme/checkout:v2",
		"release-id":  "c1:prod-eu/prod",
		"version":     "v2",
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// annotation is the first workflow command of a kind in stdout, decoded.
func annotation(stdout, kind string) (string, bool) {
	for _, line := range strings.Split(stdout, "\n") {
		if msg, ok := strings.CutPrefix(line, "::"+kind+" title=ripcord::"); ok {
			r := strings.NewReplacer("%0A", "\n", "%0D", "\r", "%25", "%")
			return r.Replace(msg), true
		}
	}
	return "", false
}
