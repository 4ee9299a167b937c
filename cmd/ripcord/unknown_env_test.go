package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ripcord/ripcord/internal/testbin"
	"github.com/ripcord/ripcord/internal/testdb"
)

// misspelt are RIPCORD_* variables an operator writes by mistake, each with
// the one meant: the key and the flag of the webhook secrets are plural,
// the variable is not.
var misspelt = map[string]string{
	"RIPCORD_GITHUB_WEBHOOK_SECRETS": "RIPCORD_GITHUB_WEBHOOK_SECRET",
	"RIPCORD_DATABSE":                "RIPCORD_DATABASE",
}

// knownAndExempt sets variables that must not be warned about: another
// command's, and the tests' own (with-postgres.sh exports
// RIPCORD_TEST_POSTGRES to every test that runs the binary).
func knownAndExempt(t *testing.T) {
	t.Setenv("RIPCORD_SERVER", "http://127.0.0.1:1")
	if os.Getenv(testdb.PostgresEnv) == "" {
		t.Setenv(testdb.PostgresEnv, "postgres://unused@127.0.0.1:1/none")
	}
}

// checkWarnings checks that output has one warning line per variable of
// want (misspelt name → the variable meant), each from the logger as from
// says (a line from(l) holds), naming it and the variable meant, and no
// other warning.
func checkWarnings(t *testing.T, output string, want map[string]string, from func(line string) bool) {
	t.Helper()
	var warnings []string
	for _, l := range strings.Split(output, "\n") {
		if strings.Contains(l, "is not a ripcord setting") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != len(want) {
		t.Errorf("%d warnings, want one per misspelt variable (%d):\n%s", len(warnings), len(want), output)
	}
	for name, meant := range want {
		found := false
		for _, l := range warnings {
			if from(l) && strings.Contains(l, name+" ") && strings.Contains(l, "did you mean "+meant+"?") {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning line names %s and suggests %s:\n%s", name, meant, output)
		}
	}
}

// prefixed is a line starting with prefix.
func prefixed(prefix string) func(string) bool {
	return func(l string) bool { return strings.HasPrefix(l, prefix) }
}

// A misspelt variable left in a unit file no longer passes unnoticed, and
// does not take the server down either: serve starts, ready, and warns
// once per variable.
func TestServeWarnsAboutUnknownVariablesAndStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server as a child process")
	}
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	for name := range misspelt {
		t.Setenv(name, "sqlite://typo.db")
	}
	knownAndExempt(t)
	c := startChild(t, bin, "sqlite://"+filepath.Join(t.TempDir(), "ripcord.db"))
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("serve did not stop cleanly: %v\n%s", err, c.logs.String())
	}
	checkWarnings(t, c.logs.String(), misspelt, prefixed("time="))
	for _, l := range strings.Split(c.logs.String(), "\n") {
		if strings.Contains(l, "is not a ripcord setting") && !strings.Contains(l, "level=WARN") {
			t.Errorf("not a warning: %s", l)
		}
	}
}

// migrate loads the same configuration, so it warns the same way.
func TestMigrateWarnsAboutUnknownVariables(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	knownAndExempt(t)
	env := []string{"RIPCORD_DATABASE=sqlite://" + filepath.Join(t.TempDir(), "ripcord.db")}
	for name := range misspelt {
		env = append(env, name+"=x")
	}
	code, out, errOut := ripcord(t, env, "migrate")
	if code != 0 || !strings.Contains(out, "schema version") {
		t.Fatalf("ripcord migrate: exit %d\n%s\n%s", code, out, errOut)
	}
	checkWarnings(t, errOut, misspelt, prefixed("ripcord migrate: warning: "))
}

// apiMisspelt are variables a shell that runs the CLI may hold by mistake,
// each with the one meant.
var apiMisspelt = map[string]string{
	"RIPCORD_API_TOKN": "RIPCORD_API_TOKEN",
	"RIPCORD_SERVR":    "RIPCORD_SERVER",
}

// apiCommand is the command line of a command that talks to a server
// with --token, with the variable its token comes from.
type apiCommand struct {
	args     []string
	tokenEnv string
}

// apiCommands are all the commands that talk to a server with --token.
var apiCommands = []apiCommand{
	{[]string{"releases", "list"}, apiTokenEnv},
	{[]string{"releases", "show", "cli-1"}, apiTokenEnv},
	{[]string{"releases", "audit", "cli-1"}, apiTokenEnv},
	{[]string{"fact", "--cluster", "prod-eu", "--name", "checkout"}, clusterTokenEnv},
	{[]string{"rollback", "--app", "checkout", "--environment", "prod", "--reason", "bad deploy"}, apiTokenEnv},
	{[]string{"rollout", "start", "--app", "checkout", "--environment", "prod", "--version", "v1"}, apiTokenEnv},
	{[]string{"rollout", "status", "1"}, apiTokenEnv},
	{[]string{"rollout", "list", "--app", "checkout", "--environment", "prod"}, apiTokenEnv},
	{[]string{"rollout", "approve", "--user", "octocat", "1"}, apiTokenEnv},
	{[]string{"rollout", "abort", "--user", "octocat", "1"}, apiTokenEnv},
}

// The token variables of the CLI, the tokens inProcessServer takes for
// them, and a typo of each.
const (
	apiTokenEnv     = "RIPCORD_API_TOKEN"
	clusterTokenEnv = "RIPCORD_CLUSTER_TOKEN"
)

var (
	goodToken = map[string]string{apiTokenEnv: "cli-token", clusterTokenEnv: "eu-token"}
	tokenTypo = map[string]string{apiTokenEnv: "RIPCORD_API_TOKN", clusterTokenEnv: "RIPCORD_CLUSTER_TOKN"}
	tokenMust = map[string]string{apiTokenEnv: "must be the server's api_token", clusterTokenEnv: "must be the cluster's token"}
)

// apiCommandName is the command's name as its messages start with it:
// ripcord and the command with its subcommand.
func apiCommandName(args []string) string {
	name := "ripcord " + args[0]
	if args[0] == "releases" || args[0] == "rollout" {
		name += " " + args[1]
	}
	return name
}

// eachAPICommand runs test once per command of apiCommands, as a subtest,
// with the variables of knownAndExempt set and url a server in this
// process that all of them talk to.
func eachAPICommand(t *testing.T, test func(t *testing.T, url string, c apiCommand)) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	knownAndExempt(t)
	url := inProcessServer(t)
	for _, c := range apiCommands {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) { test(t, url, c) })
	}
}

// Every command whose -h page lists --token is one of apiCommands, so a new
// command that talks to the server is held to the tests below.
func TestAPICommandsListsEveryCommandWithAToken(t *testing.T) {
	for _, page := range helpPages {
		code, help, _ := ripcord(t, nil, append(page, "-h")...)
		if code != 0 || !strings.Contains(help, "\n  -token string") {
			continue
		}
		found := false
		for _, c := range apiCommands {
			found = found || apiCommandName(c.args) == "ripcord "+strings.Join(page, " ")
		}
		if !found {
			t.Errorf("ripcord %s takes --token but is not in apiCommands", strings.Join(page, " "))
		}
	}
}

// A misspelt RIPCORD_API_TOKN left the CLI with no token, or an old one,
// and the server's bare 401: every command that talks to the server warns
// once per unknown variable, naming the one meant, as serve does, whether
// it then gets an answer or has no token to send.
func TestAPICommandsWarnAboutUnknownVariables(t *testing.T) {
	eachAPICommand(t, func(t *testing.T, url string, c apiCommand) {
		name := apiCommandName(c.args)
		env := []string{"RIPCORD_SERVER=" + url, c.tokenEnv + "=" + goodToken[c.tokenEnv]}
		for misspelt := range apiMisspelt {
			env = append(env, misspelt+"=x")
		}
		// Exit 0, or 1 for the server's refusal of the example's
		// values: the command went on to ask the server.
		code, stdout, stderr := ripcord(t, env, c.args...)
		if code != 0 && !(code == 1 && strings.Contains(stderr, "server answered")) {
			t.Fatalf("exit %d; want the server's answer\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		checkWarnings(t, stderr, apiMisspelt, prefixed(name+": warning: "))

		// With the token's variable misspelt, the refusal comes with
		// the warning that says why.
		typo := tokenTypo[c.tokenEnv]
		env = []string{"RIPCORD_SERVER=" + url, c.tokenEnv + "=", typo + "=" + goodToken[c.tokenEnv]}
		code, _, stderr = ripcord(t, env, c.args...)
		if code != 2 || !strings.Contains(stderr, "no token") {
			t.Fatalf("with %s misspelt: exit %d, stderr %q; want 2, no token", c.tokenEnv, code, stderr)
		}
		checkWarnings(t, stderr, map[string]string{typo: c.tokenEnv}, prefixed(name+": warning: "))
	})
}

// A 401 says where the token the server refused came from, the flag or the
// variable, and what it must be: the server cannot know.
func TestAPICommandsSayWhereARefusedTokenCameFrom(t *testing.T) {
	eachAPICommand(t, func(t *testing.T, url string, c apiCommand) {
		must := tokenMust[c.tokenEnv]
		code, _, stderr := ripcord(t, []string{"RIPCORD_SERVER=" + url, c.tokenEnv + "=stale"}, c.args...)
		if want := "the token was read from environment variable " + c.tokenEnv; code != 1 || !strings.Contains(stderr, "401") ||
			!strings.Contains(stderr, want) || !strings.Contains(stderr, must) {
			t.Errorf("a wrong token from %s: exit %d, stderr %q; want 1, the 401, %q and %q", c.tokenEnv, code, stderr, want, must)
		}
		code, _, stderr = ripcord(t, []string{"RIPCORD_SERVER=" + url, c.tokenEnv + "=stale"}, append(c.args, "--token", "typed")...)
		if want := "the token was given by flag --token"; code != 1 || !strings.Contains(stderr, "401") ||
			!strings.Contains(stderr, want) || !strings.Contains(stderr, must) {
			t.Errorf("a wrong --token: exit %d, stderr %q; want 1, the 401, %q and %q", code, stderr, want, must)
		}
	})
}
