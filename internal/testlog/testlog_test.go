package testlog

import (
	"fmt"
	"strings"
	"testing"
)

func TestRingKeepsTheNewestRecordsOldestFirst(t *testing.T) {
	r := &ring{max: 3}
	for i := range 5 {
		fmt.Fprintf(r, "record %d\n", i)
	}
	got := strings.Join(r.lines(), "")
	if want := "record 2\nrecord 3\nrecord 4\n"; got != want {
		t.Errorf("kept %q, want %q", got, want)
	}
}

func TestRingShowsEverythingBeforeItIsFull(t *testing.T) {
	r := &ring{max: 3}
	fmt.Fprintf(r, "a\n")
	fmt.Fprintf(r, "b\n")
	if got := strings.Join(r.lines(), ""); got != "a\nb\n" {
		t.Errorf("kept %q, want %q", got, "a\nb\n")
	}
}

// recorder is a testing.TB that records what would be logged and lets
// the test say whether it failed.
type recorder struct {
	testing.TB
	failed   bool
	cleanups []func()
	logged   []string
}

func (r *recorder) Helper()          {}
func (r *recorder) Failed() bool     { return r.failed }
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Logf(format string, args ...any) {
	r.logged = append(r.logged, fmt.Sprintf(format, args...))
}
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestAFailedTestShowsTheServersLog(t *testing.T) {
	t.Setenv("RIPCORD_E2E_LOG", "")
	rec := &recorder{TB: t, failed: true}
	log := New(rec)
	log.Debug("not kept")
	log.Info("fact stored", "id", "f-1")
	log.Error("request failed", "err", "database is locked")
	rec.end()
	if len(rec.logged) != 1 {
		t.Fatalf("logged %d times, want once: %q", len(rec.logged), rec.logged)
	}
	out := rec.logged[0]
	for _, want := range []string{"msg=\"fact stored\" id=f-1", "msg=\"request failed\" err=\"database is locked\""} {
		if !strings.Contains(out, want) {
			t.Errorf("the log shown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not kept") {
		t.Errorf("the log shown has a debug record:\n%s", out)
	}
}

func TestAPassingTestShowsNothing(t *testing.T) {
	t.Setenv("RIPCORD_E2E_LOG", "")
	rec := &recorder{TB: t}
	New(rec).Error("request failed")
	rec.end()
	if len(rec.logged) != 0 {
		t.Errorf("a passing test logged %q", rec.logged)
	}
}
