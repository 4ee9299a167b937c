package githubtest

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedEnv names the environment variable that points at the shared directory (the one
// holding github/) when it does not sit next to the repository.
const SharedEnv = "RIPCORD_SHARED"

// SharedDir returns the directory that holds github/openapi and github/webhooks. It looks at
// $RIPCORD_SHARED first, then walks up from the test's working directory looking for
// shared/github, and skips the test when neither has it: these files are GitHub's, not
// ripcord's, and are not shipped with the repository.
func SharedDir(t testing.TB) string {
	t.Helper()
	if dir, ok := findShared(); ok {
		return dir
	}
	t.Skip("needs ../shared/github (GitHub's OpenAPI description and webhook payloads), or $" + SharedEnv + " naming the directory that holds github/: not found")
	return ""
}

func findShared() (string, bool) {
	if dir := os.Getenv(SharedEnv); dir != "" {
		if isDir(filepath.Join(dir, "github")) {
			return dir, true
		}
		return "", false
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for dir := wd; ; {
		candidate := filepath.Join(dir, "shared")
		if isDir(filepath.Join(candidate, "github")) {
			return candidate, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
