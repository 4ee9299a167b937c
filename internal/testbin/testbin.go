// Package testbin builds the ripcord binary for tests that run it as a
// child process: once per test binary, with the flags of `make build` so
// the build cache is shared, and into a temporary folder that Main removes
// when the tests end. The binary is about 115 MB; left behind by every run
// of every package that builds it, it fills a disk within a day of work.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Package is the import path of the command the tests run.
const Package = "github.com/ripcord/ripcord/cmd/ripcord"

var (
	mu  sync.Mutex
	dir string // the folder of the built binary, once built
)

var build = sync.OnceValues(func() (string, error) {
	d, err := os.MkdirTemp("", "ripcord-bin")
	if err != nil {
		return "", err
	}
	mu.Lock()
	dir = d
	mu.Unlock()
	bin := filepath.Join(d, "ripcord")
	out, err := exec.Command("go", "build", "-trimpath", "-o", bin, Package).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", Package, err, out)
	}
	return bin, nil
})

// Ripcord builds the ripcord binary on its first call and returns its
// path; later calls return the same path (or the same build error). A test
// package that calls it must run its tests through Main.
func Ripcord() (string, error) { return build() }

// Main runs the package's tests, removes the binary Ripcord built, whatever
// the tests' outcome, and exits with their code. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	remove()
	os.Exit(code)
}

// remove deletes the folder of the built binary, if one was built.
func remove() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
