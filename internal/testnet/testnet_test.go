package testnet

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Nothing listens on a free address: a connection is refused, and a
// server can take it.
func TestFreeAddr(t *testing.T) {
	addr := FreeAddr(t)
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s: %v, want the connection refused", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on the free address %s: %v", addr, err)
	}
	ln.Close()
	port := FreePort(t)
	if _, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial the free port %d: %v, want the connection refused", port, err)
	}
}

// A server with a read timeout cuts the slow client; one that never
// answers is reported as still open.
func TestTrickleUntilCut(t *testing.T) {
	const head = "GET / HTTP/1.1\r\nHost: testnet\r\n"
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		name, addr string
		within     time.Duration
		cut        bool
	}{
		{"cut at the read timeout", srv.Listener.Addr().String(), 5 * time.Second, true},
		{"held open by a silent server", Silent(t), 300 * time.Millisecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", c.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := TrickleUntilCut(conn, head, c.within); (err == nil) != c.cut {
				t.Errorf("TrickleUntilCut = %v, want the connection cut: %v", err, c.cut)
			}
		})
	}
}

// A silent server takes connections and answers nothing.
func TestSilent(t *testing.T) {
	conn, err := net.Dial("tcp", Silent(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := conn.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read from a silent server: %d bytes, %v; want nothing until the deadline", n, err)
	}
}
