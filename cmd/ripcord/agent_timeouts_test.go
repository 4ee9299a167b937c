package main

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testnet"
)

// The agent's /healthz and /metrics server cuts a client that sends its
// headers a byte at a time, as the server's does: such clients could
// otherwise hold connections, and goroutines, in the agent's pod for as
// long as they like.
func TestTheAgentCutsASlowClientAtItsReadTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := agentServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	}), 300*time.Millisecond)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Within 5 s, well past the 300 ms: the old 10 s header timeout would
	// still hold the connection.
	if err := testnet.TrickleUntilCut(conn, "GET /healthz HTTP/1.1\r\nHost: agent\r\n", 5*time.Second); err != nil {
		t.Fatalf("%v; the read timeout is 300 ms", err)
	}
}
