package memtrim

import (
	"runtime"
	"testing"
)

func TestTuneServerProcsAddsOneUnlessTheOperatorChose(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	if n := TuneServerProcs(func(k string) string {
		if k == "GOMAXPROCS" {
			return "3"
		}
		return ""
	}); n != 0 || runtime.GOMAXPROCS(0) != before {
		t.Errorf("with GOMAXPROCS set: returned %d, GOMAXPROCS %d; want 0 and %d unchanged", n, runtime.GOMAXPROCS(0), before)
	}
	if n := TuneServerProcs(func(string) string { return "" }); n != before+1 || runtime.GOMAXPROCS(0) != before+1 {
		t.Errorf("returned %d, GOMAXPROCS %d; want %d", n, runtime.GOMAXPROCS(0), before+1)
	}
}
