package store

import (
	"errors"
	"os"
	"syscall"
)

// errLocked means another process holds the lock.
var errLocked = errors.New("locked")

// lockExclusive takes an flock(2) lock on f without waiting. It is the
// kernel's, tied to the open file: it goes with the process, a crash
// included, and never conflicts with SQLite's own (POSIX) locks.
func lockExclusive(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EWOULDBLOCK:
			return errLocked
		}
		return err
	}
}
