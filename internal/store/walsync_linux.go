package store

import (
	"os"
	"syscall"
)

// datasync flushes a file's data and the metadata needed to read it back
// (its size), not its times: fdatasync, one journal commit fewer than fsync.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
