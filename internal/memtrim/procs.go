package memtrim

import "runtime"

// TuneServerProcs runs the server with one processor (P) more than Go's
// default, unless the operator set GOMAXPROCS. It returns the value set,
// or 0 when it left the runtime alone.
//
// The intake's group commit is one goroutine that spends most of its time
// in blocking system calls: SQLite's writes and the WAL's flush. When such
// a call returns, the goroutine needs a P to go on; with one P per core,
// both are busy with request goroutines and it waits in the run queue
// behind them, while every delivery of the batch waits for it. One P more
// lets it go on at once. Under the load command the rate rose ~15 % and
// the CPU per delivery fell; go-githubapp's dispatcher alone, which makes
// no such calls, was slower with it (PERFORMANCE.md, session 4).
//
// Setting GOMAXPROCS stops Go from following later changes of the
// container's CPU limit; the value set follows the limit at start.
func TuneServerProcs(getenv func(string) string) int {
	if getenv("GOMAXPROCS") != "" {
		return 0
	}
	n := runtime.GOMAXPROCS(0) + 1
	runtime.GOMAXPROCS(n)
	return n
}
