package main

import (
	"flag"
	"strings"
	"testing"
)

// A wrong flag was said once, above the command's page of flags, so the
// last thing on the screen was the page: `ripcord rollback --env prod`
// left a newcomer to find among thirty lines that the flag is
// --environment. The mistake is now said again at the end, with the flag
// most likely meant.
func TestFlagMistakeIsSaidAfterThePage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		last string
	}{
		{"a prefix of one flag", []string{"--env", "prod"}, "ripcord test: unknown flag --env; did you mean --environment?"},
		{"snake_case for kebab-case", []string{"--release_id", "x"}, "ripcord test: unknown flag --release_id; did you mean --release-id?"},
		{"a typo", []string{"--repositroy", "acme/shop"}, "ripcord test: unknown flag --repositroy; did you mean --repository?"},
		{"a prefix of two flags is no guess", []string{"--re", "x"}, "ripcord test: unknown flag --re"},
		{"nothing near", []string{"--bogus"}, "ripcord test: unknown flag --bogus"},
		{"a bad value", []string{"--limit", "ten"}, `ripcord test: invalid value "ten" for flag -limit: parse error`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("ripcord test", flag.ContinueOnError)
			var out strings.Builder
			fs.SetOutput(&out)
			fs.String("environment", "", "the environment")
			fs.String("repository", "", "the repository")
			fs.String("release-id", "", "the release id")
			fs.Int("limit", 50, "at most this many")
			fs.Bool("json", false, "print JSON")
			code, stop := parse(fs, c.args)
			if code != 2 || !stop {
				t.Fatalf("parse(%q) = %d, %v; want 2, true", c.args, code, stop)
			}
			lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
			if got := lines[len(lines)-1]; got != c.last {
				t.Errorf("last line %q, want %q\noutput:\n%s", got, c.last, out.String())
			}
			if !strings.Contains(out.String(), "-environment") {
				t.Errorf("output %q: want the page of flags too", out.String())
			}
		})
	}
}
