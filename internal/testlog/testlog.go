// Package testlog gives a test a logger for the servers it starts. The
// log is kept in memory and shown only when the test fails, so that a
// failure seen once in CI (a 500, a job given up) comes with the server's
// own account of it; a passing test prints nothing.
//
// With RIPCORD_E2E_LOG set, every record (debug level included) goes to
// standard error as it is written instead.
package testlog

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

// Keep is how many of the newest records a failed test shows.
const Keep = 400

// New is a logger whose info, warning and error records the test shows,
// the newest Keep of them, if it fails. Its records may be written after
// the test has ended (by a server still stopping): they are kept, never
// passed to t.
func New(t testing.TB) *slog.Logger {
	t.Helper()
	if os.Getenv("RIPCORD_E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	r := &ring{max: Keep}
	t.Cleanup(func() {
		if t.Failed() {
			if lines := r.lines(); len(lines) > 0 {
				t.Logf("the server's log (the newest %d records; RIPCORD_E2E_LOG=1 shows all):\n%s", len(lines), strings.Join(lines, ""))
			}
		}
	})
	return slog.New(slog.NewTextHandler(r, nil))
}

// ring keeps the newest max writes. slog's text handler writes each
// record in one call.
type ring struct {
	mu    sync.Mutex
	max   int
	recs  []string
	first int // index of the oldest record once recs is full
}

func (r *ring) Write(p []byte) (int, error) {
	line := string(bytes.Clone(p))
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recs) < r.max {
		r.recs = append(r.recs, line)
	} else {
		r.recs[r.first] = line
		r.first = (r.first + 1) % r.max
	}
	return len(p), nil
}

// lines returns the records kept, oldest first.
func (r *ring) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.recs))
	out = append(out, r.recs[r.first:]...)
	return append(out, r.recs[:r.first]...)
}
