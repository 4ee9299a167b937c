package testdb

import (
	"syscall"
	"testing"
	"unsafe"
)

// SetFileSizeLimit sets the soft RLIMIT_FSIZE of process pid (prlimit(2); 0
// is the calling process), keeping its hard limit: a write past the limit
// fails with EFBIG, as a write to a full disk fails with ENOSPC. Unlike a
// read-only directory, it refuses writes through files the process already
// has open, and it binds root too (CI runs as root, for whom permissions do
// not). ^uint64(0) lifts it again.
func SetFileSizeLimit(t testing.TB, pid int, limit uint64) {
	t.Helper()
	var old syscall.Rlimit
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE,
		0, uintptr(unsafe.Pointer(&old)), 0, 0); errno != 0 {
		t.Fatalf("read the file size limit of %d: %v", pid, errno)
	}
	lim := syscall.Rlimit{Cur: min(limit, old.Max), Max: old.Max}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE,
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
		t.Fatalf("set the file size limit of %d: %v", pid, errno)
	}
}
