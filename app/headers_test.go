package app

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A request whose headers pass 64 KiB is refused 431 before any handler
// runs: Go's default let each connection send 1 MiB of them.
func TestOversizedHeadersAreRefused(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	addr := strings.TrimPrefix(ts.URL, "http://")
	for _, c := range []struct {
		name string
		size int
		want int
	}{
		{"a large cookie passes", 16 << 10, http.StatusOK},
		{"twice the limit is refused", 128 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{"well under Go's 1 MiB is refused", 512 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := statusWithHeader(t, addr, c.size); got != c.want {
				t.Errorf("GET /healthz with a %d KiB header: status %d, want %d", c.size>>10, got, c.want)
			}
		})
	}
}

// statusWithHeader sends GET /healthz with one header of size bytes to
// addr and returns the status of the answer.
func statusWithHeader(t *testing.T, addr string, size int) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// Written while the answer is read: a server that stops reading at
	// its limit must not leave the write, and the test, blocked.
	go func() {
		_, _ = fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: ripcord\r\nX-Filler: %s\r\nConnection: close\r\n\r\n",
			strings.Repeat("a", size))
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a %d-byte header: %v", size, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
