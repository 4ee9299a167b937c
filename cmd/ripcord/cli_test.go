package main

import (
	"context"
	"encoding/json"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/testbin"
	"github.com/ripcord/ripcord/internal/testnet"
	"github.com/ripcord/ripcord/internal/testserve"
)

// inProcessServer runs the server in this test process on loopback.
func inProcessServer(t *testing.T) string {
	t.Helper()
	return testserve.Start(t, func(cfg *config.Config, _ string) {
		cfg.APIToken = "cli-token"
		cfg.Clusters = config.TokensOf(map[string]string{"prod-eu": "eu-token"})
	})
}

// ripcord runs the built binary and returns its exit code and output.
func ripcord(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runBinary(t, append(os.Environ(), env...), args...)
}

// runBinary runs the built binary with exactly the environment environ
// and returns its exit code and output.
func runBinary(t *testing.T, environ []string, args ...string) (int, string, string) {
	t.Helper()
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = environ
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

func TestFactAndReleasesCommands(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	url := inProcessServer(t)
	cluster := []string{"RIPCORD_SERVER=" + url, "RIPCORD_CLUSTER_TOKEN=eu-token"}
	people := []string{"RIPCORD_SERVER=" + url, "RIPCORD_API_TOKEN=cli-token"}

	fact := filepath.Join(t.TempDir(), "fact.json")
	os.WriteFile(fact, []byte(`{"source":"task","cluster":"prod-eu","repository":"acme/checkout","workflow_run_id":9,
		"run_attempt":1,"status":"in_progress","app":"checkout","environment":"prod","version":"v9",
		"release_id":"cli-1","observed_at":"`+time.Now().UTC().Format(time.RFC3339)+`"}`), 0o600)
	code, out, errOut := ripcord(t, cluster, "fact", "--cluster", "prod-eu", "--file", fact)
	if code != 0 || !strings.Contains(out, `"outcome": "opened"`) {
		t.Fatalf("ripcord fact: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = ripcord(t, cluster, "fact", "--cluster", "prod-eu", "--source", "deployment", "--namespace", "shop",
		"--name", "checkout", "--uid", "u-1", "--generation", "2", "--phase", "Healthy", "--release-id", "cli-1", "--image", "v9")
	if code != 0 || !strings.Contains(out, `"state": "healthy"`) {
		t.Errorf("ripcord fact from flags: exit %d\n%s", code, out)
	}

	code, out, _ = ripcord(t, people, "releases", "list", "--app", "checkout")
	if code != 0 || !strings.Contains(out, "cli-1") || !strings.Contains(out, "healthy") {
		t.Errorf("releases list: exit %d\n%s", code, out)
	}
	code, out, _ = ripcord(t, people, "releases", "audit", "cli-1")
	if code != 0 || !strings.Contains(out, "release_opened") || !strings.Contains(out, "state_changed") {
		t.Errorf("releases audit: exit %d\n%s", code, out)
	}
	// --json prints the server's JSON: its keys, not the CLI's Go names.
	for _, args := range [][]string{{"releases", "list", "--json"}, {"releases", "audit", "cli-1", "--json"}} {
		code, out, errOut := ripcord(t, people, args...)
		var got map[string][]map[string]any
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("%s: exit %d, %v\n%s%s", strings.Join(args, " "), code, err, out, errOut)
		}
		key := map[string]string{"list": "releases", "audit": "events"}[args[1]]
		if len(got[key]) == 0 || got[key][0]["release_id"] != "cli-1" {
			t.Errorf("%s printed %s; want the server's {%q: [{\"release_id\": \"cli-1\", ...}]}", strings.Join(args, " "), out, key)
		}
	}
	code, _, errOut = ripcord(t, people, "releases", "show", "no-such-release")
	if code != 1 || !strings.Contains(errOut, "404") {
		t.Errorf("releases show of an unknown id: exit %d, stderr %q; want 1 and the 404", code, errOut)
	}
	code, _, errOut = ripcord(t, []string{"RIPCORD_SERVER=" + url, "RIPCORD_API_TOKEN="}, "releases", "list")
	if code != 2 || !strings.Contains(errOut, "RIPCORD_API_TOKEN") {
		t.Errorf("no token: exit %d, stderr %q; want 2 and what to set", code, errOut)
	}
}

func TestValidateCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yml")
	os.WriteFile(good, []byte("version: 1\napps:\n  checkout:\n    environments:\n      prod:\n        cluster: prod-eu\n        workflows: [deploy.yml]\n"), 0o600)
	bad := filepath.Join(dir, "bad.yml")
	os.WriteFile(bad, []byte("version: 1\nrecovery:\n  max_retry: 3\n"), 0o600)

	if code, _, errOut := ripcord(t, nil, "validate", good); code != 0 {
		t.Errorf("a valid file: exit %d (%s)", code, errOut)
	}
	waves := filepath.Join(dir, "waves.yml")
	os.WriteFile(waves, []byte(wavesYML), 0o600)
	if code, out, errOut := ripcord(t, nil, "validate", waves); code != 0 || !strings.Contains(out, wavesStages) {
		t.Errorf("a file with waves: exit %d, output %q (%s); want its stages", code, out, errOut)
	}
	code, out, _ := ripcord(t, nil, "validate", bad)
	if code != 1 || !strings.Contains(out, bad+":3:3:") || !strings.Contains(out, "max_retries") {
		t.Errorf("a file with a typo: exit %d, output %q; want 1 and path:3:3 suggesting max_retries", code, out)
	}
	// --max-parallel checks a wave's parallel as the server will.
	wide := filepath.Join(dir, "wide.yml")
	wavesYAML, err := os.ReadFile(waves)
	if err != nil {
		t.Fatal(err)
	}
	wideYAML := strings.Replace(string(wavesYAML), `{name: canary, select: "canary=true"}`, `{name: canary, select: "canary=true", parallel: 8}`, 1)
	if err := os.WriteFile(wide, []byte(wideYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := ripcord(t, nil, "validate", "--max-parallel", "4", wide); code != 1 || !strings.Contains(out, "max_parallel 4") {
		t.Errorf("parallel 8 with --max-parallel 4: exit %d, output %q (%s); want the problem", code, out, errOut)
	}
	// The default, whatever the environment the tests run in says.
	if code, _, errOut := ripcord(t, []string{"RIPCORD_CONFIG=", "RIPCORD_ROLLOUT_MAX_PARALLEL="}, "validate", wide); code != 0 {
		t.Errorf("parallel 8 under the default 16: exit %d (%s)", code, errOut)
	}
}

// `ripcord validate` exits 1 when what it validated is invalid (a file, or
// the environment's RIPCORD_* variables) and 2 when it was used wrongly, as
// its -h page, docs/cli.md and the README say, so that CI can tell a broken
// config from a broken job.
func TestValidateExitCodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	write := fileWriter(t, dir)
	good := write("good.yml", "version: 1\n")
	typo := write("typo.yml", "version: 1\nrecovery:\n  max_retry: 3\n")
	notYAML := write("not-yaml.yml", "version: [1\n")
	cases := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout string // a line of it, when the problem is printed there
		stderr string
	}{
		{"a valid file", nil, []string{good}, 0, "", "valid"},
		{"a file with a problem", nil, []string{typo}, 1, typo + ":3:3:", ""},
		{"a file that is not YAML", nil, []string{notYAML}, 1, notYAML + ":1:", ""},
		{"a valid file and one with a problem", nil, []string{good, typo}, 1, typo + ":3:3:", ""},
		{"an unknown RIPCORD_ variable", []string{"RIPCORD_DATABSE=sqlite://x.db"}, []string{good}, 1,
			"environment variable RIPCORD_DATABSE is not a ripcord setting and is ignored; did you mean RIPCORD_DATABASE?", ""},
		{"an unknown flag", nil, []string{"--bogus", good}, 2, "", "flag provided but not defined: -bogus"},
		{"a flag value that is not a number", nil, []string{"--max-parallel", "many", good}, 2, "", "invalid value"},
		{"a flag value out of range", nil, []string{"--max-parallel", "0", good}, 2, "", "--max-parallel must be at least 1"},
		{"a file that does not exist", nil, []string{filepath.Join(dir, "missing.yml")}, 2, "", "no such file"},
		{"a folder", nil, []string{dir}, 2, "", "is a directory"},
		// Every file gets its report before the exit status is decided.
		{"a missing file before a file with a problem", nil, []string{filepath.Join(dir, "missing.yml"), typo}, 2, typo + ":3:3:", "no such file"},
		{"a missing file before a valid one", nil, []string{filepath.Join(dir, "missing.yml"), good}, 2, "", good + ": valid"},
		{"a file with a problem, then a folder", nil, []string{typo, dir}, 2, typo + ":3:3:", "is a directory"},
		{"help", nil, []string{"-h"}, 0, "usage: ripcord validate", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ripcord(t, c.env, append([]string{"validate"}, c.args...)...)
			if code != c.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			if c.stdout != "" && !strings.Contains(stdout, c.stdout) {
				t.Errorf("stdout %q does not say %q", stdout, c.stdout)
			}
			if !strings.Contains(stderr, c.stderr) {
				t.Errorf("stderr %q does not say %q", stderr, c.stderr)
			}
		})
	}
	// The page says what each exit status means.
	_, help, _ := ripcord(t, nil, "validate", "-h")
	help = strings.Join(strings.Fields(help), " ")
	for _, want := range []string{"Exit status: 0 when everything is valid; 1 when a file or the environment has a problem;",
		"2 when the command is used wrongly: an unknown flag, a bad flag value,",
		"or a FILE that cannot be read (2 wins over 1)", "Every file is checked, even after one that cannot be read."} {
		if !strings.Contains(help, want) {
			t.Errorf("ripcord validate -h does not say %q:\n%s", want, help)
		}
	}
}

// `ripcord validate` checks a wave's parallel against the max_parallel the
// server would load (flag > environment > settings file > 16), so an
// operator whose server runs with 4 is not told that 8 is fine.
func TestValidateUsesTheServersMaxParallel(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	write := fileWriter(t, dir)
	wide := write("wide.yml", `version: 1
apps:
  shop:
    environments:
      prod:
        cluster: prod-eu
        targets:
          - {host: a1, labels: {region: eu-1, az: eu-1a}}
          - {host: a2, labels: {region: eu-1, az: eu-1a}}
        rollout:
          waves:
            - {name: all, select: "region=eu-1", parallel: 8}
`)
	four := write("four.yml", "rollout:\n  max_parallel: 4\n")
	twelve := write("twelve.yml", "rollout:\n  max_parallel: 12\n")
	typo := write("typo.yml", "rollout:\n  max_paralel: 4\n")
	cases := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"the default 16", nil, nil, 0, "", "valid"},
		{"the environment's 4", []string{"RIPCORD_ROLLOUT_MAX_PARALLEL=4"}, nil, 1, "max_parallel 4",
			"rollout.max_parallel 4, from environment variable RIPCORD_ROLLOUT_MAX_PARALLEL"},
		{"--config's file", nil, []string{"--config", four}, 1, "max_parallel 4", four + ":2:17"},
		{"RIPCORD_CONFIG's file", []string{"RIPCORD_CONFIG=" + four}, nil, 1, "max_parallel 4", four + ":2:17"},
		{"the environment over the file", []string{"RIPCORD_CONFIG=" + four, "RIPCORD_ROLLOUT_MAX_PARALLEL=10"}, nil, 0, "", "valid"},
		{"the flag over the environment", []string{"RIPCORD_ROLLOUT_MAX_PARALLEL=4"}, []string{"--max-parallel", "8"}, 0, "", "from flag --max-parallel"},
		{"the flag over the file", nil, []string{"--config", four, "--max-parallel", "9"}, 0, "", "valid"},
		{"--config over RIPCORD_CONFIG", []string{"RIPCORD_CONFIG=" + four}, []string{"--config", twelve}, 0, "", "valid"},
		{"a value serve would refuse", []string{"RIPCORD_ROLLOUT_MAX_PARALLEL=0"}, nil, 2, "", "rollout.max_parallel (from environment variable RIPCORD_ROLLOUT_MAX_PARALLEL)"},
		{"a settings file that does not exist", nil, []string{"--config", filepath.Join(dir, "missing.yml")}, 2, "", "no such file"},
		{"a settings file with a typo", nil, []string{"--config", typo}, 2, "", "rollout.max_paralel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The test's own environment must not choose for the case.
			env := append([]string{"RIPCORD_CONFIG=", "RIPCORD_ROLLOUT_MAX_PARALLEL="}, c.env...)
			code, stdout, stderr := ripcord(t, env, append(append([]string{"validate"}, c.args...), wide)...)
			if code != c.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			if !strings.Contains(stdout, c.stdout) {
				t.Errorf("stdout %q does not say %q", stdout, c.stdout)
			}
			if !strings.Contains(stderr, c.stderr) {
				t.Errorf("stderr %q does not say %q", stderr, c.stderr)
			}
		})
	}
}

// A command that takes no arguments refuses one instead of ignoring it: an
// unquoted reason would otherwise open a rollback with its first word only,
// and `releases list checkout` would list every app as if filtered.
func TestCommandsRefuseArgumentsTheyWouldIgnore(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	url := inProcessServer(t)
	people := []string{"RIPCORD_SERVER=" + url, "RIPCORD_API_TOKEN=cli-token"}
	cluster := []string{"RIPCORD_SERVER=" + url, "RIPCORD_CLUSTER_TOKEN=eu-token"}
	fact := filepath.Join(t.TempDir(), "fact.json")
	if err := os.WriteFile(fact, []byte(`{"source":"deployment","cluster":"prod-eu","namespace":"shop","name":"checkout",
		"uid":"u-1","generation":1,"observed_generation":1,"phase":"Healthy","release_id":"r-1",
		"observed_at":"`+time.Now().UTC().Format(time.RFC3339)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  []string
		args []string
		arg  string
	}{
		{"a reason without quotes", people, []string{"rollback", "--app", "checkout", "--environment", "prod", "--reason", "bad", "deploy"}, "deploy"},
		{"an app without --app", people, []string{"releases", "list", "checkout"}, "checkout"},
		{"a rollout list with a stray word", people, []string{"rollout", "list", "--app", "checkout", "--environment", "prod", "eu"}, "eu"},
		{"a rollout start with a stray word", people, []string{"rollout", "start", "--app", "checkout", "--environment", "prod", "--version", "v42", "now"}, "now"},
		{"an id beside --release-id", people, []string{"rollout", "status", "7", "--release-id", "cli-1"}, "7"},
		{"a fact file and a stray word", cluster, []string{"fact", "--cluster", "prod-eu", "--file", fact, "again"}, "again"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ripcord(t, c.env, c.args...)
			if want := `unexpected argument "` + c.arg + `"`; code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("ripcord %s: exit %d, stderr %q; want 2 and %s\nstdout: %s", strings.Join(c.args, " "), code, stderr, want, stdout)
			}
		})
	}
}

// A fact flag beside --file was dropped without a word: `--phase Degraded`
// typed to correct the file's Healthy posted the file's Healthy, and the
// release went healthy. The command refuses the mix, naming the flags, and
// posts nothing.
func TestFactFileRefusesFieldFlags(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	url := inProcessServer(t)
	cluster := []string{"RIPCORD_SERVER=" + url, "RIPCORD_CLUSTER_TOKEN=eu-token"}
	fact := filepath.Join(t.TempDir(), "fact.json")
	if err := os.WriteFile(fact, []byte(`{"source":"deployment","cluster":"prod-eu","namespace":"shop","name":"checkout",
		"uid":"u-1","generation":1,"observed_generation":1,"phase":"Healthy","release_id":"r-1",
		"observed_at":"`+time.Now().UTC().Format(time.RFC3339)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args  []string
		flags string
	}{
		{[]string{"--phase", "Degraded"}, "--phase"},
		{[]string{"--name", "cart", "--generation", "2", "--abort"}, "--abort, --generation, --name"},
	}
	for _, c := range cases {
		t.Run(c.flags, func(t *testing.T) {
			args := append([]string{"fact", "--cluster", "prod-eu", "--file", fact}, c.args...)
			code, stdout, stderr := ripcord(t, cluster, args...)
			want := "ripcord fact: " + c.flags + " cannot be used with --file"
			if code != 2 || !strings.Contains(stderr, want) || stdout != "" {
				t.Errorf("ripcord %s: exit %d, stderr %q, stdout %q; want 2, %q and nothing posted",
					strings.Join(args, " "), code, stderr, stdout, want)
			}
		})
	}
	// The file alone, or with the flags that say where to post it, goes.
	code, stdout, stderr := ripcord(t, cluster, "fact", "--cluster", "prod-eu", "--server", url, "--file", fact)
	if code != 0 || !strings.Contains(stdout, `"outcome"`) {
		t.Errorf("ripcord fact --file: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// fileWriter returns a function that writes content to a file of that name
// in dir, and returns its path.
func fileWriter(t *testing.T, dir string) func(name, content string) string {
	return func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// When no server answers, the error says at which URL and where that URL
// came from: a newcomer who had not started `ripcord serve`, or whose
// RIPCORD_SERVER named an old address, saw only "connection refused".
func TestAPIClientSaysWhereTheServerURLCameFrom(t *testing.T) {
	closed := "http://" + testnet.RefusedAddr(t) // nothing listens there
	cases := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"from the environment", closed, nil, "whose URL was read from environment variable RIPCORD_SERVER"},
		{"from the flag", "http://127.0.0.1:1", []string{"--server", closed}, "whose URL was given by flag --server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("RIPCORD_SERVER", c.env)
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
			if err := fs.Parse(append(c.args, "--token", "t")); err != nil {
				t.Fatal(err)
			}
			cl, err := client()
			if err != nil {
				t.Fatal(err)
			}
			cl.retries = 0
			err = cl.do(context.Background(), "GET", "/api/v1/releases", nil, nil)
			if err == nil || !strings.Contains(err.Error(), "no server answered at "+closed) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v; want it to say no server answered at %s, and %q", err, closed, c.want)
			}
		})
	}
}

// A command missing several required flags names them all, in the order of
// its page, before any request: it named one, picked at random.
func TestCommandsNameEveryMissingRequiredFlag(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	env := []string{"RIPCORD_SERVER=http://127.0.0.1:1", "RIPCORD_API_TOKEN=t"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"rollback", "--app", "checkout"}, "ripcord rollback: --environment and --reason are required"},
		{[]string{"rollback"}, "ripcord rollback: --app, --environment and --reason are required"},
		{[]string{"rollback", "--app", "checkout", "--environment", "prod"}, "ripcord rollback: --reason is required"},
		{[]string{"rollout", "start", "--version", "v42"}, "ripcord rollout start: --app and --environment are required"},
		{[]string{"rollout", "start", "--app", "checkout"}, "ripcord rollout start: --environment and --version are required"},
		{[]string{"rollout", "list", "--unfinished"}, "ripcord rollout list: --app and --environment are required"},
		{[]string{"rollout", "list", "--app", "checkout"}, "ripcord rollout list: --environment is required"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, stderr := ripcord(t, env, c.args...)
			if code != 2 || strings.TrimSpace(stderr) != c.want {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
}

// A command line the command cannot run is said to be wrong before the
// token is looked for: `ripcord rollout status` without an id answered
// "no token" to a user with no token set, who then set one to learn that
// the id was missing.
func TestCommandLineIsCheckedBeforeTheToken(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	noToken := []string{"RIPCORD_SERVER=http://127.0.0.1:1", "RIPCORD_API_TOKEN=", "RIPCORD_CLUSTER_TOKEN="}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"rollout", "status"}, "usage: ripcord rollout status ROLLOUT_ID | --release-id RELEASE_ID"},
		{[]string{"rollout", "status", "ro-1", "ro-2"}, "usage: ripcord rollout status ROLLOUT_ID | --release-id RELEASE_ID"},
		{[]string{"rollout", "status", "7", "--release-id", "cli-1"}, `unexpected argument "7"`},
		{[]string{"rollout", "approve", "--user", "octocat"}, "usage: ripcord rollout approve"},
		{[]string{"releases", "show"}, "usage: ripcord releases show RELEASE_ID"},
		{[]string{"fact", "--file", "-"}, "--cluster is required"},
		{[]string{"rollback", "--app", "checkout"}, "--environment and --reason are required"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, stderr := ripcord(t, noToken, c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "no token") {
				t.Errorf("exit %d, stderr %q; want 2 and %q, not the missing token", code, stderr, c.want)
			}
		})
	}
}

// An address serve cannot listen on stops it with a line that names the
// listen setting, where its value came from and how to set another, as a
// bad setting's line does: "bind: address already in use" alone left a
// newcomer whose default 127.0.0.1:8080 was taken to find the setting.
// And it stops before it opens the database.
func TestServeNamesTheListenSettingItCannotListenOn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the server as a child process")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	cases := []struct {
		name string
		env  []string
		args []string
		from string
	}{
		{"flag", []string{"RIPCORD_LISTEN="}, []string{"--listen", addr}, "flag --listen"},
		{"environment", []string{"RIPCORD_LISTEN=" + addr}, nil, "environment variable RIPCORD_LISTEN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			env := append([]string{"RIPCORD_DATABASE=sqlite://" + filepath.Join(dir, "ripcord.db"),
				"RIPCORD_PUBLIC_URL=", "RIPCORD_CONFIG="}, c.env...)
			code, _, stderr := ripcord(t, env, append([]string{"serve"}, c.args...)...)
			// The port is tried before the database: serve applied the
			// migrations first, creating a database in a fresh folder
			// for a server that was never going to start.
			if files, err := os.ReadDir(dir); err != nil || len(files) != 0 {
				t.Errorf("serve on a taken port left %v in the database's folder (%v); want nothing touched", files, err)
			}
			for _, want := range []string{
				"config: listen (from " + c.from + "): cannot listen on " + addr + ": bind: address already in use",
				"another process listens there",
				"--listen, RIPCORD_LISTEN or listen in the --config file",
			} {
				if code != 1 || !strings.Contains(stderr, want) {
					t.Errorf("ripcord serve: exit %d, want 1 and %q\nstderr: %s", code, want, stderr)
				}
			}
		})
	}
}

// Only one of github.app_id and github.private_key set leaves the App of
// the configuration unused; serve said only that the App was not
// configured, to someone who had just configured half of it. It now says
// which one is set, from where, and which is missing.
func TestServeSaysWhichHalfOfTheAppIsMissing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the server as a child process")
	}
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	srv := startChild(t, bin, "sqlite://"+filepath.Join(t.TempDir(), "ripcord.db"),
		"RIPCORD_GITHUB_APP_ID=42", "RIPCORD_GITHUB_PRIVATE_KEY=", "RIPCORD_CONFIG=")
	if err := srv.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, srv.logs.String())
	}
	want := "github.app_id is set (from environment variable RIPCORD_GITHUB_APP_ID) but github.private_key " +
		"(--github-private-key, RIPCORD_GITHUB_PRIVATE_KEY) is not"
	if logs := srv.logs.String(); !strings.Contains(logs, want) {
		t.Errorf("serve's log does not say %q:\n%s", want, logs)
	}
}

// A fact the server refuses for several fields is answered with one line
// per field, each naming its own; the CLI put the answer's first field
// after the last line, so "release_id: is required (field uid)" named the
// wrong field for the line it ended.
func TestFactRefusedForSeveralFieldsNamesEachLinesOwn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	url := inProcessServer(t)
	code, _, stderr := ripcord(t, []string{"RIPCORD_SERVER=" + url, "RIPCORD_CLUSTER_TOKEN=eu-token"},
		"fact", "--cluster", "prod-eu", "--namespace", "shop", "--name", "checkout", "--phase", "Healthy", "--generation", "1")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 1 || len(lines) < 2 {
		t.Fatalf("exit %d, stderr %q: want 1 and a line per bad field", code, stderr)
	}
	for _, l := range lines {
		if i := strings.Index(l, "(field "); i >= 0 {
			field := strings.TrimSuffix(l[i+len("(field "):], ")")
			if !strings.Contains(l, field+": ") {
				t.Errorf("line %q names field %s, which is not the one it is about", l, field)
			}
		}
	}
}
