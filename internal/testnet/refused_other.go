//go:build !unix

package testnet

import "testing"

// RefusedAddr is FreeAddr where a socket cannot be bound without
// listening through package syscall: the port may be taken meanwhile.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	return FreeAddr(t)
}
