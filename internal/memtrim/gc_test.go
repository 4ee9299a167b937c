package memtrim

import (
	"math"
	"runtime/debug"
	"testing"
)

// restoreGC puts the test binary's GC settings back after a test changed them.
func restoreGC(t *testing.T) {
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

func TestTuneServerGCAppliesDefaultsWhenOperatorChoseNothing(t *testing.T) {
	restoreGC(t)
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	if !TuneServerGC(func(string) string { return "" }) {
		t.Fatal("TuneServerGC reported no change with GOGC and GOMEMLIMIT unset")
	}
	if got := debug.SetGCPercent(100); got != ServerGCPercent {
		t.Errorf("GC percent = %d, want %d", got, ServerGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != ServerMemoryLimit {
		t.Errorf("memory limit = %d, want %d", got, ServerMemoryLimit)
	}
}

func TestTuneServerGCLeavesOperatorSettingsAlone(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			restoreGC(t)
			debug.SetGCPercent(77)
			debug.SetMemoryLimit(math.MaxInt64)
			getenv := func(k string) string {
				if k == env {
					return "50"
				}
				return ""
			}
			if TuneServerGC(getenv) {
				t.Fatalf("TuneServerGC changed settings although %s was set", env)
			}
			if got := debug.SetGCPercent(100); got != 77 {
				t.Errorf("GC percent = %d, want the operator's 77", got)
			}
			if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
				t.Errorf("memory limit = %d, want it unset", got)
			}
		})
	}
}
