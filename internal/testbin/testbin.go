// Package testbin builds the ripcord binary for tests that run it as a
// child process: once per test binary, with the flags of `make build` so
// the build cache is shared, and into a temporary folder that Main removes
// when the tests end. The binary is about 115 MB; left behind by every run
// of every package that builds it, it fills a disk within a day of work.
// A run that never reaches the end of Main (killed by go test's -timeout,
// or by a signal) leaves its folder; the next build removes the folders of
// runs whose process is gone.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Package is the import path of the command the tests run.
const Package = "github.com/ripcord/ripcord/cmd/ripcord"

var (
	mu  sync.Mutex
	dir string // the folder of the built binary, once built
)

// prefix starts the name of each run's folder, which goes on with the
// run's process id and a dash.
const prefix = "ripcord-bin-"

var build = sync.OnceValues(func() (string, error) {
	removeLeftovers(os.TempDir())
	d, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", prefix, os.Getpid()))
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

// removeLeftovers deletes the folders in tmp that runs left behind: those
// whose process no longer runs. A folder of a process that still runs (or
// of a reused process id) stays; one named otherwise is not testbin's.
func removeLeftovers(tmp string) {
	folders, err := filepath.Glob(filepath.Join(tmp, prefix+"*-*"))
	if err != nil {
		return
	}
	for _, f := range folders {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(f), prefix), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || running(n) {
			continue
		}
		_ = os.RemoveAll(f)
	}
}

// running reports whether a process with id pid exists (signal 0 checks
// without sending; EPERM: it exists, owned by another user).
func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
