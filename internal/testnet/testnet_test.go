package testnet

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
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

// A server with a read timeout cuts the slow client; one that holds its
// connections is reported as still open.
func TestTrickleUntilCut(t *testing.T) {
	const head = "GET / HTTP/1.1\r\nHost: testnet\r\n"
	t.Run("cut at the read timeout", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.NotFoundHandler(), ReadTimeout: 200 * time.Millisecond}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := TrickleUntilCut(conn, head, 5*time.Second); err != nil {
			t.Errorf("against a 200 ms read timeout: %v", err)
		}
	})
	t.Run("held open", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var held []net.Conn
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				go func() { _, _ = io.Copy(io.Discard, c) }() // reads every byte, never answers
			}
		}()
		t.Cleanup(func() {
			ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range held {
				c.Close()
			}
		})
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := TrickleUntilCut(conn, head, 300*time.Millisecond); err == nil {
			t.Error("against a server that never hangs up: nil, want an error saying the connection is still open")
		}
	})
}
