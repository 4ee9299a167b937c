package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// typos are the misspelt variables the tests set on purpose, so that the
// repository scan below does not take them for variables of ripcord.
var typos = []string{"RIPCORD_GITHUB_WEBHOOK_SECRETS", "RIPCORD_DATABSE", "RIPCORD_NOT_A_SETTING_AT_ALL",
	"RIPCORD_CLUSTER_TOKN", "RIPCORD_AGENT_STAT", "RIPCORD_API_TOKN", "RIPCORD_SERVR"}

// An operator who writes RIPCORD_GITHUB_WEBHOOK_SECRETS (the key and the
// flag are plural) or RIPCORD_DATABSE got the default and no word: each
// unknown variable is now named with the known one it most likely meant.
func TestUnknownEnvironmentVariablesAreNamedWithTheNearestKnownOne(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin",
		"RIPCORD_DATABSE=sqlite://x.db",
		"RIPCORD_GITHUB_WEBHOOK_SECRETS=s1",
		"RIPCORD_LISTEN=127.0.0.1:1",            // a setting
		"RIPCORD_CONFIG=/etc/ripcord.yml",       // --config
		"RIPCORD_SERVER=http://127.0.0.1:8080",  // the CLI's
		"RIPCORD_TEST_POSTGRES=postgres://x/db", // the tests'
		"RIPCORD_NOT_A_SETTING_AT_ALL=1",
		"RIPCORD_DATABSE=twice",
		"ripcord_database=lower case is not ripcord's",
	}
	got := CheckEnv(environ)
	want := []UnknownEnv{
		{"RIPCORD_DATABSE", "RIPCORD_DATABASE"},
		{"RIPCORD_GITHUB_WEBHOOK_SECRETS", "RIPCORD_GITHUB_WEBHOOK_SECRET"},
		{"RIPCORD_NOT_A_SETTING_AT_ALL", ""},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("CheckEnv = %+v, want %+v", got, want)
	}
	for _, u := range got {
		line := u.String()
		if !strings.Contains(line, u.Name) || strings.Contains(line, "\n") {
			t.Errorf("%q: want one line naming %s", line, u.Name)
		}
		if u.Nearest != "" && !strings.Contains(line, "did you mean "+u.Nearest+"?") {
			t.Errorf("%q does not suggest %s", line, u.Nearest)
		}
	}
}

// Every RIPCORD_* variable the repository's code, scripts, chart, CI,
// tests and docs name is known: a setting's, another command's, or a
// test's or script's (exempt), so the warning never fires for a variable
// this repository itself sets (with-postgres.sh exports
// RIPCORD_TEST_POSTGRES to every test that runs the binary), and a typo in
// the docs or the chart fails here.
func TestEveryRIPCORDVariableOfTheRepositoryIsKnown(t *testing.T) {
	known := KnownEnv()
	name := regexp.MustCompile(`RIPCORD_[A-Z0-9_]*[A-Z0-9]`)
	seen := map[string]string{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "bin" {
				return filepath.SkipDir
			}
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 2<<20 {
			return err // a built binary or a data file, not a place that sets a variable
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(data), -1) {
			if _, ok := seen[n]; !ok {
				seen[n] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"RIPCORD_TEST_POSTGRES", "RIPCORD_DATABASE", "RIPCORD_SERVER"} {
		if _, ok := seen[must]; !ok {
			t.Fatalf("the scan did not find %s: it did not read the repository", must)
		}
	}
	for n, path := range seen {
		if !slices.Contains(known, n) && !slices.Contains(typos, n) {
			t.Errorf("%s (in %s) is neither a setting, another command's variable nor exempt (env.go)", n, path)
		}
	}
}

// The README's configuration reference names every RIPCORD_* variable that
// is known without being a setting, so that an operator who is warned
// about one variable can look up which others are fine.
func TestREADMENamesTheKnownVariablesThatAreNotSettings(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	begin, end := strings.Index(text, "\n## Configuration\n"), strings.Index(text, "<!-- config-reference:begin")
	if begin < 0 || end < begin {
		t.Fatal("README.md has no configuration section before its reference table")
	}
	for _, n := range slices.Concat(commandEnv, exemptEnv) {
		if !strings.Contains(text[begin:end], "`"+n+"`") {
			t.Errorf("README's configuration section does not name %s", n)
		}
	}
}
