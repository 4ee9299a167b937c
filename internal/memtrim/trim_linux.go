package memtrim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// DropColdExecutablePages unmaps the resident pages of the executable's
// read-only mappings (code and read-only data) and returns how many bytes
// of address space it advised. Writable mappings are never touched: their
// private pages would lose what the program wrote.
func DropColdExecutablePages() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("memtrim: find the executable: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("memtrim: %w", err)
	}
	defer f.Close()
	var advised int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		start, end, ok := readOnlyMappingOf(sc.Text(), exe)
		if !ok {
			continue
		}
		// MADV_RANDOM first: without it a fault maps the 16 pages around
		// the one asked for (the kernel's fault-around), and the scattered
		// reads of the runtime's tables would bring most of them back.
		for _, advice := range []uintptr{syscall.MADV_RANDOM, syscall.MADV_DONTNEED} {
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, advice); errno != 0 {
				return advised, fmt.Errorf("memtrim: madvise(%d) %x-%x: %w", advice, start, end, errno)
			}
		}
		advised += int64(end - start)
	}
	return advised, sc.Err()
}

// readOnlyMappingOf parses one line of /proc/self/maps,
// "start-end perms offset dev inode path", and reports the range when the
// mapping is of path and not writable.
func readOnlyMappingOf(line, path string) (start, end uintptr, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || strings.Join(fields[5:], " ") != path {
		return 0, 0, false
	}
	perms := fields[1]
	if len(perms) < 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
		return 0, 0, false // writable, or shared: leave it alone
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(lo, 16, 64)
	e, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
