package app

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/internal/testnet"
)

// Slowloris: a client that sends its headers, or its body, a byte at a
// time has its connection closed at the read timeout, not held for ever.
func TestASlowClientIsCutAtTheReadTimeout(t *testing.T) {
	// Not parallel: it bounds the cut's wall time (5 s), which the CPU of
	// the package's other tests stretched past.
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{ReadTimeout: 300 * time.Millisecond})
	for _, c := range []struct{ name, head string }{
		{"headers", "GET /healthz HTTP/1.1\r\nHost: ripcord\r\n"},
		{"body", "POST /api/v1/releases HTTP/1.1\r\nHost: ripcord\r\nAuthorization: Bearer " + testToken +
			"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Within 5 s, well past the 300 ms: the old server's 10 s header
			// timeout, or no bound at all on the body, would still hold the
			// connection.
			if err := testnet.TrickleUntilCut(dial(t, ts), c.head, 5*time.Second); err != nil {
				t.Fatalf("%v; the read timeout is 300 ms", err)
			}
		})
	}
}

// The read timeout ends with the request's body: the agent's long poll,
// which waits longer than it with nothing left to read, is answered.
func TestTheReadTimeoutDoesNotCutALongPoll(t *testing.T) {
	t.Parallel()
	ts := startServerWith(t, testdb.MigratedURL(t, "sqlite"), Options{ReadTimeout: 200 * time.Millisecond}, func(c *configT) {
		c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
	})
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/v1/clusters/prod-eu/actions?agent=agent-1&wait=1s", nil)
	req.Header.Set("Authorization", "Bearer tok-eu")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK || time.Since(start) < time.Second {
		t.Errorf("long poll: %d after %s, want 200 after its 1 s wait: %s", resp.StatusCode, time.Since(start), b.String())
	}
}
