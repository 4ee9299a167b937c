package memtrim

import (
	"runtime/debug"
)

// Server GC defaults, used when the environment sets neither GOGC nor
// GOMEMLIMIT.
//
// Go's default (GOGC=100) starts a collection whenever the heap has grown
// by its live size. A busy server's live heap is small (tens of MB) while
// every webhook delivery allocates its 12 KB body a few times over, so at
// thousands of deliveries a second the default collects many times a
// second: a quarter of the CPU of `ripcord serve` under load went to
// marking (PERFORMANCE.md). Letting the heap grow to five times its live
// size cuts that by about four, and the soft limit keeps the growth from
// ever taking the heap past what the Helm chart's 256 MiB limit allows.
const (
	ServerGCPercent   = 400
	ServerMemoryLimit = 160 << 20
)

// TuneServerGC applies the server's GC defaults unless the operator set
// GOGC or GOMEMLIMIT (the runtime already applied those; either one means
// the operator chose, so neither default is applied). It returns whether it
// changed anything.
func TuneServerGC(getenv func(string) string) bool {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return false
	}
	debug.SetGCPercent(ServerGCPercent)
	debug.SetMemoryLimit(ServerMemoryLimit)
	return true
}
