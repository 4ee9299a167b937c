//go:build unix

package testnet

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// A refused address refuses connections and no listener can take its
// port while the test runs (the kernel hands out a port for bind(0) by
// the same rule); once the test ends, the port is free again.
func TestRefusedAddr(t *testing.T) {
	var addr string
	t.Run("held", func(t *testing.T) {
		addr = RefusedAddr(t)
		if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial %s: %v, want the connection refused", addr, err)
		}
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			t.Fatalf("a listener took the refused address %s", addr)
		}
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the refused address %s is still held after its test: %v", addr, err)
	}
	ln.Close()
}
