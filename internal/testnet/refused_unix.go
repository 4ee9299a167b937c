//go:build unix

package testnet

import (
	"fmt"
	"syscall"
	"testing"
)

// RefusedAddr is a loopback address ("127.0.0.1:PORT") where connecting
// is refused for the whole test, and which no listener can take meanwhile:
// a socket is bound to the port without listening on it (and without
// SO_REUSEADDR, so the kernel hands the port to no other bind), and the
// test's end closes it. FreeAddr only says a port was free a moment ago:
// a server the test starts next, or a parallel test's, can be given that
// very port, and a connection meant to be refused then reaches it (CI,
// 2026-12-03: an OIDC issuer "unreachable" at the address of the test
// issuer started right after).
func RefusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("a socket for a refused address: %v", err)
	}
	syscall.CloseOnExec(fd)
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind a refused address: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("the port of a refused address: %v", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("the refused address's socket is bound to %T, not IPv4", sa)
	}
	return fmt.Sprintf("127.0.0.1:%d", in4.Port)
}
