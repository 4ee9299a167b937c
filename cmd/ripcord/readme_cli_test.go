package main

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ripcord/ripcord/internal/testbin"
)

// readme is the project's README, which a newcomer follows.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeCommands are the ripcord command lines the README shows: its
// `ripcord …` code spans and the lines of its code blocks that start with
// ripcord (with the indented lines that continue them).
func readmeCommands(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`(ripcord [^`]*)`").FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	inBlock := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock = !inBlock
		case inBlock && strings.HasPrefix(line, "ripcord "):
			out = append(out, line)
		case inBlock && strings.HasPrefix(line, "    [") && len(out) > 0 && strings.HasPrefix(out[len(out)-1], "ripcord "):
			out[len(out)-1] += " " + strings.TrimSpace(line)
		}
	}
	return out
}

// Every command and flag the README shows is one `ripcord … -h` lists, so
// a newcomer who copies a line from the README is not told that the flag
// is not defined.
func TestREADMECommandsUseRealFlags(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	lines := readmeCommands(readme(t))
	if len(lines) < 10 {
		t.Fatalf("found %d ripcord commands in the README; the extraction is broken: %q", len(lines), lines)
	}
	help := map[string]string{}
	for _, line := range lines {
		checkFlags(t, "README", line, help)
	}
}

// checkFlags checks that the command of a ripcord command line that where
// shows exists and that its -h page lists every flag the line uses; help
// keeps the pages read so far, by command.
func checkFlags(t *testing.T, where, line string, help map[string]string) {
	t.Helper()
	subcommands := map[string][]string{"releases": {"list", "show", "audit"}, "rollout": {"start", "status", "list", "approve", "abort"}}
	flagRE := regexp.MustCompile(`(?:^|[\s\[(|])--([a-z][a-z-]*)`)
	words := strings.Fields(line)
	if len(words) < 2 || words[1] == "<command>" || words[1] == "help" {
		return
	}
	cmd := []string{words[1]}
	if !slices.ContainsFunc(commands, func(c command) bool { return c.name == words[1] }) {
		t.Errorf("%s: %q: ripcord has no command %q", where, line, words[1])
		return
	}
	if subs, ok := subcommands[words[1]]; ok && len(words) > 2 {
		sub, _, _ := strings.Cut(words[2], "|")
		if slices.Contains(subs, sub) {
			cmd = append(cmd, sub)
		}
	}
	key := strings.Join(cmd, " ")
	if _, ok := help[key]; !ok {
		code, page, _ := ripcord(t, nil, append(cmd, "-h")...)
		if code != 0 {
			t.Fatalf("ripcord %s -h: exit %d\n%s", key, code, page)
		}
		help[key] = page
	}
	for _, m := range flagRE.FindAllStringSubmatch(line, -1) {
		if m[1] == "help" {
			continue
		}
		if !strings.Contains(help[key], "\n  -"+m[1]+" ") && !strings.Contains(help[key], "\n  -"+m[1]+"\n") {
			t.Errorf("%s: %q: ripcord %s -h lists no flag --%s", where, line, key, m[1])
		}
	}
}

// The README's commands that need no GitHub run as written against a real
// `ripcord serve` on SQLite: a newcomer who follows it gets what it says.
func TestREADMEOfflineCommandsRunAgainstServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the server as a child process")
	}
	text := readme(t)
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dbURL := "sqlite://" + filepath.Join(dir, "ripcord.db")
	// `ripcord migrate` first, as an operator would before a start.
	code, out, errOut := ripcord(t, []string{"RIPCORD_DATABASE=" + dbURL}, "migrate")
	if code != 0 || !strings.Contains(out+errOut, "schema version") {
		t.Fatalf("ripcord migrate: exit %d\n%s%s", code, out, errOut)
	}
	srv := startChild(t, bin, dbURL, "RIPCORD_CLUSTERS=prod-eu=eu-token")
	t.Cleanup(func() { srv.cmd.Process.Kill(); srv.cmd.Wait() })
	server := "RIPCORD_SERVER=http://" + srv.addr
	people := []string{server, "RIPCORD_API_TOKEN=t"}

	// A release to look at: the bundled action's task fact, from stdin.
	fact := fmt.Sprintf(`{"source":"task","cluster":"prod-eu","repository":"acme/checkout","workflow_run_id":9,
		"run_attempt":1,"status":"in_progress","app":"checkout","environment":"prod","version":"v9",
		"release_id":"readme-1","observed_at":%q}`, time.Now().UTC().Format(time.RFC3339))
	post := exec.Command(bin, "fact", "--cluster", "prod-eu", "--file", "-")
	post.Env = append(os.Environ(), server, "RIPCORD_CLUSTER_TOKEN=eu-token")
	post.Stdin = strings.NewReader(fact)
	if b, err := post.CombinedOutput(); err != nil || !strings.Contains(string(b), `"outcome": "opened"`) {
		t.Fatalf("ripcord fact --file -: %v\n%s", err, b)
	}

	// The repository's example .github/ripcord.yml, as the README shows it.
	block := regexp.MustCompile("(?s)```yaml\n(version: 1\n.*?)```").FindStringSubmatch(text)
	if block == nil {
		t.Fatal("the README shows no example .github/ripcord.yml (a yaml block starting with version: 1)")
	}
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".github"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".github", "ripcord.yml"), []byte(block[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	// The rollout section's environments, each in the example's app, as
	// a reader copies them.
	rollouts := rolloutExamples(t, text, block[1])
	for i, cfg := range rollouts {
		if err := os.WriteFile(filepath.Join(repo, ".github", fmt.Sprintf("rollout-%d.yml", i)), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		readme string   // as the README writes it
		args   []string // with its placeholders filled in
		dir    string
		code   int
		out    string
	}{
		{"ripcord version", []string{"version"}, "", 0, "ripcord "},
		{"ripcord validate .github/ripcord.yml", []string{"validate", ".github/ripcord.yml"}, repo, 0, ".github/ripcord.yml: valid"},
		{"ripcord releases show ID", []string{"releases", "show", "readme-1"}, "", 0, "readme-1"},
		{"ripcord releases audit ID", []string{"releases", "audit", "readme-1"}, "", 0, "release_opened"},
		{"ripcord releases list", []string{"releases", "list"}, "", 0, "readme-1"},
		{"ripcord rollout list --app … --environment … --unfinished",
			[]string{"rollout", "list", "--app", "checkout", "--environment", "prod", "--unfinished"}, "", 0, "ROLLOUT"},
		{"ripcord rollout status ID | --release-id RELEASE [--json]",
			[]string{"rollout", "status", "--release-id", "readme-1"}, "", 1, "release readme-1 has no rollout"},
		// Without GitHub these cannot go through; the server's refusal
		// says why, and the command passes it on with exit status 1.
		{"ripcord rollback --app checkout --environment prod [--cluster prod-eu] [--to RELEASE_ID|sha256:…] [--repository acme/checkout] --reason \"…\"",
			[]string{"rollback", "--app", "checkout", "--environment", "prod", "--cluster", "prod-eu", "--repository", "acme/checkout", "--reason", "bad deploy"},
			"", 1, "no GitHub App is configured, so ripcord cannot act on acme/checkout: set github.app_id"},
		{"ripcord rollout start --app checkout --environment prod --version v42 [--repository acme/checkout]",
			[]string{"rollout", "start", "--app", "checkout", "--environment", "prod", "--version", "v42", "--repository", "acme/checkout"},
			"", 1, "no GitHub App is configured, so ripcord cannot act on acme/checkout: set github.app_id"},
		{"ripcord rollout approve --user LOGIN [--reject] [--comment NOTE] ID",
			[]string{"rollout", "approve", "--user", "octocat", "ro-0000000000"}, "", 1, `no rollout with id "ro-0000000000"`},
		{"ripcord rollout abort --user LOGIN [--reason WHY] ID",
			[]string{"rollout", "abort", "--user", "octocat", "--reason", "a fix is coming", "ro-0000000000"}, "", 1, `no rollout with id "ro-0000000000"`},
	}
	for i := range rollouts {
		file := fmt.Sprintf(".github/rollout-%d.yml", i)
		cases = append(cases, struct {
			readme string
			args   []string
			dir    string
			code   int
			out    string
		}{"Check a plan with `ripcord validate`", []string{"validate", file}, repo, 0, file + ": valid"})
	}
	for _, c := range cases {
		t.Run(c.readme, func(t *testing.T) {
			if !strings.Contains(text, c.readme) {
				t.Fatalf("the README no longer shows %q: update this test with it", c.readme)
			}
			cmd := exec.Command(bin, c.args...)
			cmd.Env = append(os.Environ(), people...)
			cmd.Dir = c.dir
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code || !strings.Contains(stdout.String()+stderr.String(), c.out) {
				t.Errorf("ripcord %s: exit %d, want %d and %q\nstdout: %s\nstderr: %s", strings.Join(c.args, " "), code, c.code, c.out, stdout.String(), stderr.String())
			}
		})
	}
}

// rolloutExamples are the YAML examples of the README's rollout section
// ("### Rollouts in waves") that are an environment of .github/ripcord.yml,
// each as the only environment of the app of example (the README's
// .github/ripcord.yml, up to its environments). The section's other YAML blocks are the workflows
// it shows (their first key on:, or a comment naming the file): they must
// parse. A block that is neither fails the test, so that an example added
// to the section is checked too.
func rolloutExamples(t *testing.T, text, example string) []string {
	t.Helper()
	head, _, ok := strings.Cut(example, "    environments:\n")
	if !ok {
		t.Fatal("the README's example .github/ripcord.yml has no environments: to put the rollout examples in")
	}
	_, section, ok := strings.Cut(text, "\n### Rollouts in waves\n")
	if !ok {
		t.Fatal("the README has no rollout section (### Rollouts in waves)")
	}
	var configs []string
	inBlock, yamlBlock, block := false, false, ""
	for _, line := range strings.SplitAfter(section, "\n") {
		switch {
		case !inBlock && strings.HasPrefix(line, "#"):
			if len(configs) == 0 {
				t.Fatal("the README's rollout section shows no .github/ripcord.yml environment")
			}
			return configs // the next section
		case !inBlock && strings.HasPrefix(line, "```"):
			inBlock, yamlBlock, block = true, strings.TrimSpace(line) == "```yaml", ""
		case inBlock && strings.HasPrefix(line, "```"):
			inBlock = false
			switch {
			case !yamlBlock:
			case regexp.MustCompile(`^ {6}[a-z][a-z0-9-]*:\n`).MatchString(block):
				configs = append(configs, head+"    environments:\n"+block)
			case strings.HasPrefix(block, "on:") || strings.HasPrefix(block, "# .github/workflows/"):
				var v map[string]any
				if err := yaml.Unmarshal([]byte(block), &v); err != nil {
					t.Errorf("the README's rollout section shows a workflow that does not parse: %v\n%s", err, block)
				}
			default:
				t.Errorf("the README's rollout section shows a YAML block that is neither an environment of "+
					".github/ripcord.yml (indented as in its example) nor a workflow: teach rolloutExamples to check it\n%s", block)
			}
		case inBlock:
			block += line
		}
	}
	t.Fatal("the README's rollout section runs to its end")
	return nil
}

// A release id holds a "/", so the README's API paths that carry one work
// only escaped; a newcomer who typed the id as the README writes it got a
// plain 404. The README's curl example, escaped as it shows it, reaches
// the release's audit.
func TestREADMEReleasePathExampleReachesTheRelease(t *testing.T) {
	t.Parallel()
	text := readme(t)
	m := regexp.MustCompile(`curl -H "Authorization: Bearer \$RIPCORD_API_TOKEN" http://127\.0\.0\.1:8080(/api/v1/releases/(\S+)/audit)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("the README shows no curl example of a release's path with its id escaped")
	}
	id, err := url.PathUnescape(m[2])
	if err != nil || !strings.Contains(id, "/") || strings.Contains(m[2], "/") {
		t.Fatalf("the README's example id %q is not a release id with its / escaped", m[2])
	}
	server := inProcessServer(t)
	body := fmt.Sprintf(`{"release_id":%q,"app":"checkout","environment":"prod","cluster":"prod-eu","image":"registry.example/shop/checkout:v42"}`, id)
	if code, b := apiCall(t, "POST", server+"/api/v1/releases", body); code != 201 {
		t.Fatalf("POST /api/v1/releases: %d %s", code, b)
	}
	if code, b := apiCall(t, "GET", server+m[1], ""); code != 200 || !strings.Contains(b, "release_opened") {
		t.Errorf("GET %s: %d %s", m[1], code, b)
	}
	// As the README warns, the id unescaped names no endpoint.
	if code, _ := apiCall(t, "GET", server+"/api/v1/releases/"+id+"/audit", ""); code != 404 {
		t.Errorf("GET with the id unescaped: %d, want the 404 the README names", code)
	}
}

// apiCall sends one request with the in-process server's api_token.
func apiCall(t *testing.T, method, u, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer cli-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Every Prometheus metric ripcord defines, the server's and the agent's, is
// named in the README, so that an operator who scrapes /metrics can look up
// what a series counts. The metrics are found in the source (a metric with
// no observation yet is not on /metrics at all), so a metric added later is
// caught too.
func TestREADMENamesEveryMetric(t *testing.T) {
	t.Parallel()
	text := readme(t)
	def := regexp.MustCompile(`(?:Name:\s*|NewDesc\(\s*)"(ripcord_[a-z0-9_]+)"`)
	found := map[string]string{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range def.FindAllStringSubmatch(string(b), -1) {
			found[m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"ripcord_webhook_deliveries_total", "ripcord_rollouts_unfinished", "ripcord_agent_facts_spooled"} {
		if _, ok := found[must]; !ok {
			t.Fatalf("the scan did not find %s: it no longer reads how metrics are defined", must)
		}
	}
	for name, path := range found {
		if !regexp.MustCompile("`" + name + "[`{]").MatchString(text) {
			t.Errorf("the README does not name the metric %s (defined in %s)", name, path)
		}
	}
}

// The README's intake figures say which session of PERFORMANCE.md they
// come from, and that session holds them: the README once called them
// "the latest runs" after a later session had measured again.
func TestREADMEIntakeFiguresComeFromTheSessionTheyName(t *testing.T) {
	t.Parallel()
	text := readme(t)
	_, section, ok := strings.Cut(text, "\n## Performance\n")
	if !ok {
		t.Fatal("the README has no Performance section")
	}
	m := regexp.MustCompile(`(?m)^Session (\d+)'s runs in PERFORMANCE\.md`).FindStringSubmatch(section)
	if m == nil {
		t.Fatal("the README's Performance section does not say which session of PERFORMANCE.md its table comes from (\"Session N's runs in PERFORMANCE.md\")")
	}
	perf, err := os.ReadFile("../../PERFORMANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, session, ok := strings.Cut(string(perf), "\n### Session "+m[1]+"\n")
	if !ok {
		t.Fatalf("PERFORMANCE.md has no section \"### Session %s\"", m[1])
	}
	if end := strings.Index(session, "\n#"); end >= 0 {
		session = session[:end]
	}
	row := regexp.MustCompile(`(?m)^\| \(a\) HMAC only \|.*\n\|[-|]+\|\n(\|.*\|)$`).FindStringSubmatch(section)
	if row == nil {
		t.Fatal("the README's Performance section has no table of (a) to (d)")
	}
	cells := strings.Split(strings.Trim(row[1], "|"), "|")
	if len(cells) != 7 {
		t.Fatalf("the README's intake table has %d columns, want 7: %q", len(cells), row[1])
	}
	// (b) and (c) deliveries/s, c/b and d/b, each as the session wrote it.
	checks := map[string]*regexp.Regexp{
		cells[1]: regexp.MustCompile(`\d{1,3}(?:,\d{3})+`), cells[2]: regexp.MustCompile(`\d{1,3}(?:,\d{3})+`),
		cells[4]: regexp.MustCompile(`0\.\d\d`), cells[5]: regexp.MustCompile(`0\.\d\d`),
	}
	for cell, figure := range checks {
		if strings.Contains(cell, "target") {
			cell, _, _ = strings.Cut(cell, "(")
		}
		figures := figure.FindAllString(cell, -1)
		if len(figures) == 0 {
			t.Errorf("the README's cell %q holds no figure", cell)
		}
		for _, f := range figures {
			if !strings.Contains(session, f) {
				t.Errorf("the README's figure %s (%q) is not in PERFORMANCE.md's session %s", f, strings.TrimSpace(cell), m[1])
			}
		}
	}
}
