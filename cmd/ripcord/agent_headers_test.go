package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The agent's /healthz and /metrics server refuses headers past 64 KiB
// with 431, as the server does, instead of Go's 1 MiB per connection.
func TestTheAgentRefusesOversizedHeaders(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := agentServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	}), 0)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	for _, c := range []struct {
		size int
		want int
	}{
		{16 << 10, http.StatusOK},
		{128 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{512 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		go func() { // written while the answer is read, so a refusal cannot block it
			_, _ = fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: agent\r\nX-Filler: %s\r\nConnection: close\r\n\r\n",
				strings.Repeat("a", c.size))
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a %d KiB header: %v", c.size>>10, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != c.want {
			t.Errorf("a %d KiB header: status %d, want %d", c.size>>10, resp.StatusCode, c.want)
		}
	}
}
