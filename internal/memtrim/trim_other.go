//go:build !linux

package memtrim

// DropColdExecutablePages does nothing outside Linux.
func DropColdExecutablePages() (int64, error) { return 0, nil }
