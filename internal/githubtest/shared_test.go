package githubtest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindSharedHonoursTheEnvironment(t *testing.T) {
	withGitHub := t.TempDir()
	if err := os.Mkdir(filepath.Join(withGitHub, "github"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		env    string
		wantOK bool
	}{
		{"a directory holding github/ is used", withGitHub, true},
		{"a directory without github/ is not taken for the shared one", t.TempDir(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(SharedEnv, c.env)
			dir, ok := findShared()
			if ok != c.wantOK || (ok && dir != c.env) {
				t.Errorf("findShared() = %q, %v; want %q, %v", dir, ok, c.env, c.wantOK)
			}
		})
	}
}

func TestSharedDirFoundByWalkingUp(t *testing.T) {
	t.Setenv(SharedEnv, "")
	dir, ok := findShared()
	if !ok {
		t.Skip("needs ../shared/github (GitHub's OpenAPI description and webhook payloads): not found")
	}
	if !isDir(filepath.Join(dir, "github", "openapi")) {
		t.Errorf("findShared() = %q, which has no github/openapi", dir)
	}
}
