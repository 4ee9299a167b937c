//go:build linux

package memtrim

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

func TestReadOnlyMappingsOnly(t *testing.T) {
	const exe = "/usr/local/bin/ripcord"
	tests := []struct {
		line string
		ok   bool
	}{
		{"00400000-01c00000 r-xp 00000000 08:01 123 /usr/local/bin/ripcord", true},  // code
		{"01c00000-03000000 r--p 01800000 08:01 123 /usr/local/bin/ripcord", true},  // read-only data
		{"03000000-03100000 rw-p 02c00000 08:01 123 /usr/local/bin/ripcord", false}, // data: written to
		{"03100000-03200000 rw-p 00000000 00:00 0", false},                          // heap
		{"7f0000000000-7f0000001000 r-xp 00000000 08:01 9 /usr/lib/libc.so.6", false},
		{"00400000-01c00000 r-xs 00000000 08:01 123 /usr/local/bin/ripcord", false}, // shared
	}
	for _, tt := range tests {
		start, end, ok := readOnlyMappingOf(tt.line, exe)
		if ok != tt.ok || (ok && end <= start) {
			t.Errorf("%q: ok=%v [%x,%x), want ok=%v", tt.line, ok, start, end, tt.ok)
		}
	}
}

// The process keeps running correctly after its cold pages are dropped,
// and its resident file-backed memory goes down.
func TestDropColdExecutablePagesShrinksRSSAndKeepsRunning(t *testing.T) {
	before := rssFile(t)
	advised, err := DropColdExecutablePages()
	if err != nil {
		t.Fatal(err)
	}
	if advised == 0 {
		t.Fatal("advised no mapping of the test binary")
	}
	after := rssFile(t)
	if after >= before {
		t.Errorf("RssFile %d kB before, %d kB after: nothing was handed back", before, after)
	}
	// Code and read-only data fault back in from the file.
	if s := strconv.Itoa(42) + regexp.MustCompile(`x+`).FindString("axxb"); s != "42xx" {
		t.Fatalf("after the drop the program computes %q", s)
	}
}

func rssFile(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`RssFile:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no RssFile in /proc/self/status")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
