// Package testnet holds the loopback helpers that tests of several packages
// share: a free address, for a server a test starts or for a connection it
// wants refused; a silent server, for a client's timeouts; and a slow
// client, for a server's read timeouts.
// Its files are not _test files so that any package's tests can import it.
package testnet

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// FreeAddr is a loopback address ("127.0.0.1:PORT") that nothing listens
// on: the kernel hands out a free port, and FreeAddr closes it at once.
// Connecting to it is refused; a test may start a server or a child
// process on it (another process could take the port first, rarely). A
// test that needs the refusal to last uses RefusedAddr.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// FreePort is the port of FreeAddr.
func FreePort(t testing.TB) int {
	t.Helper()
	addr, err := net.ResolveTCPAddr("tcp", FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return addr.Port
}

// Silent is the address of a loopback listener that accepts connections
// and never answers them, nor reads what they send: a server that hangs,
// for the timeouts of a client. The test's end closes the listener and
// the connections.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// trickleEvery is how often a slow client sends its next byte: well under
// any read timeout a test sets, so that the client is never idle long
// enough to be cut for idling rather than for being slow.
const trickleEvery = 50 * time.Millisecond

// TrickleUntilCut is a slow client ("slowloris"): it writes head on conn,
// then one byte every 50 ms, until the peer hangs up. It returns nil once
// the peer has closed the connection, or an error when the connection is
// still open after within (make it well past the read timeout under test,
// so that a slow machine does not fail the test).
func TrickleUntilCut(conn net.Conn, head string, within time.Duration) error {
	if _, err := io.WriteString(conn, head); err != nil {
		return fmt.Errorf("write the request's start: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(trickleEvery):
			}
			if _, err := conn.Write([]byte("X")); err != nil {
				return
			}
		}
	}()
	if err := conn.SetReadDeadline(time.Now().Add(within)); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, conn); errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("the connection is still open %s after the slow client began sending", within)
	}
	return nil
}
