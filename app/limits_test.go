package app

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A body over its route's limit is refused 413 with the limit named, from
// its Content-Length, whatever the route and before any credential: no
// handler reads it or answers in its own words (POST /api/v1/rollouts cut
// it short and named a JSON syntax error; /api/v1/rollbacks said "read
// body: http: request body too large").
func TestBodiesOverTheirLimitAreRefusedNamingIt(t *testing.T) {
	t.Parallel()
	ts := startServerWith(t, testdb.MigratedURL(t, "sqlite"), Options{}, func(c *configT) {
		c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
	})
	oneMiB := strings.Repeat(" ", maxBodyBytes) + "{}"
	for _, c := range []struct {
		path, auth, body, limit string
	}{
		{"/api/v1/rollouts", testToken, oneMiB, "1 MiB"},
		{"/api/v1/rollouts/ro1/approve", testToken, oneMiB, "1 MiB"},
		{"/api/v1/rollbacks", testToken, strings.Repeat(" ", 64<<10) + "{}", "64 KiB"},
		{"/api/v1/releases", testToken, oneMiB, "1 MiB"},
		{"/api/v1/validate", testToken, oneMiB, "1 MiB"},
		{"/api/v1/facts", "", oneMiB, "1 MiB"},
		{"/api/v1/facts/prod-eu", "", oneMiB, "1 MiB"},
		{"/api/v1/facts/prod-eu/inventory", "tok-eu", oneMiB, "1 MiB"},
		{"/api/v1/clusters/prod-eu/actions/a1", "tok-eu", oneMiB, "1 MiB"},
		{"/releases/r1/rollback", "", oneMiB, "1 MiB"},
	} {
		t.Run(c.path, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			if c.auth != "" {
				req.Header.Set("Authorization", "Bearer "+c.auth)
			}
			status, msg := answerWhileSending(t, ts, req)
			if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "larger than "+c.limit) {
				t.Errorf("status %d %q, want 413 naming %s", status, msg, c.limit)
			}
		})
	}
}

// The 413 comes before the body: a client that announces too large a body
// and then waits is answered at once, not left waiting with a handler
// blocked on the body it will not send.
func TestATooLargeBodyIsRefusedBeforeItIsSent(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	conn := dial(t, ts)
	fmt.Fprintf(conn, "POST /api/v1/rollouts HTTP/1.1\r\nHost: ripcord\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{", testToken, 2<<20)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer before the body was sent: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
}

func dial(t *testing.T, ts *testServer) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// A chunked body (no Content-Length) over its route's limit is refused as
// one with a Content-Length is, 413 naming the limit, once reading it
// passes the limit: POST /api/v1/rollouts cut it at 1 MiB and read what was
// left, and /api/v1/rollbacks answered 400 without the limit.
func TestChunkedBodiesOverTheirLimitAreRefusedNamingIt(t *testing.T) {
	t.Parallel()
	ts := startServerWith(t, testdb.MigratedURL(t, "sqlite"), Options{}, func(c *configT) {
		c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
	})
	for _, c := range []struct {
		path, auth, body, limit string
	}{
		// A valid request once cut at 1 MiB: the old decode accepted it.
		{"/api/v1/rollouts", testToken, strings.Repeat(" ", maxBodyBytes-2) + `{"release_id":"r1"}`, "1 MiB"},
		{"/api/v1/rollouts/ro1/approve", testToken, strings.Repeat(" ", maxBodyBytes) + `{"user":"octocat"}`, "1 MiB"},
		{"/api/v1/rollbacks", testToken, strings.Repeat(" ", 64<<10) + "{}", "64 KiB"},
		// A cluster action's result said "larger than 1 MiB" with a 400.
		{"/api/v1/clusters/prod-eu/actions/a1", "tok-eu", strings.Repeat(" ", maxBodyBytes) + "{}", "1 MiB"},
	} {
		t.Run(c.path, func(t *testing.T) {
			status, msg := answerWhileSending(t, ts, newPost(ts, c.path, c.auth, c.body, true))
			if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "larger than "+c.limit) {
				t.Errorf("status %d %q, want 413 naming %s", status, msg, c.limit)
			}
		})
	}
}

// An empty body is not a request of zero values: it is refused naming what
// the route requires.
func TestAnEmptyRolloutsBodyIsRefusedNamingWhatIsRequired(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	for _, c := range []struct{ path, want string }{
		{"/api/v1/rollouts", `"release_id"`},
		{"/api/v1/rollouts/ro1/approve", `"user"`},
		{"/api/v1/rollouts/ro1/abort", `"user"`},
	} {
		t.Run(c.path, func(t *testing.T) {
			status, msg := post(t, ts, c.path, "", false)
			if status != http.StatusBadRequest || !strings.Contains(msg, "empty") || !strings.Contains(msg, c.want) {
				t.Errorf("status %d %q, want 400 saying the body is empty and naming %s", status, msg, c.want)
			}
		})
	}
}

// Every other JSON route of /api/v1 answers an empty body the same way:
// POST /api/v1/rollbacks said "the body is not a JSON object: EOF", the
// validator "not a JSON object: EOF", a cluster action's result "body is
// not a result: EOF", and releases and facts "empty or cut short"
// without saying what to send.
func TestEveryEmptyJSONBodyIsRefusedNamingWhatIsExpected(t *testing.T) {
	t.Parallel()
	ts := startServerWith(t, testdb.URL(t, "sqlite"), Options{}, func(c *configT) {
		c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
	})
	for _, c := range []struct{ path, auth, want string }{
		{"/api/v1/rollbacks", testToken, `"app", "environment" and "reason"`},
		{"/api/v1/releases", testToken, `"release_id", "app", "environment", "cluster" and "image"`},
		{"/api/v1/validate", testToken, `{"content": "<the YAML file>"}`},
		{"/api/v1/facts/prod-eu", "tok-eu", `{"facts": [fact, ...]}`},
		{"/api/v1/facts/prod-eu/inventory", "tok-eu", `"observed_at", "sources" and "uids"`},
		{"/api/v1/clusters/prod-eu/actions/a1", "tok-eu", `"agent", "status" and "outcome"`},
	} {
		t.Run(c.path, func(t *testing.T) {
			status, msg := postAs(t, ts, c.path, c.auth, "", false)
			if status != http.StatusBadRequest || !strings.Contains(msg, "the body is empty") || !strings.Contains(msg, c.want) {
				t.Errorf("status %d %q, want 400 saying the body is empty and that it expects %s", status, msg, c.want)
			}
		})
	}
}

// post sends body to path with the api token, chunked (with no
// Content-Length) or not, and returns the status and the error message.
func post(t *testing.T, ts *testServer, path, body string, chunked bool) (int, string) {
	t.Helper()
	return postAs(t, ts, path, testToken, body, chunked)
}

// postAs is post with the bearer token tok.
func postAs(t *testing.T, ts *testServer, path, tok, body string, chunked bool) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(newPost(ts, path, tok, body, chunked))
	if err != nil {
		t.Fatal(err)
	}
	return errorOf(resp)
}

// newPost is postAs's request.
func newPost(ts *testServer, path, tok, body string, chunked bool) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
	if chunked {
		req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	return req
}

// answerWhileSending sends req over a connection of its own and reads the
// answer while the body is still being written. The server answers a body
// over its limit with 413 and closes the connection without reading the
// rest; http.Client returns the write's error (broken pipe) instead of
// the answer when that write fails before it has read the answer, which
// a loaded machine makes happen.
func answerWhileSending(t *testing.T, ts *testServer, req *http.Request) (int, string) {
	t.Helper()
	conn := dial(t, ts)
	go func() { _ = req.Write(conn) }() // fails once the server has closed: expected
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("no answer to POST %s: %v", req.URL.Path, err)
	}
	return errorOf(resp)
}

// errorOf is resp's status and error message; it closes resp's body.
func errorOf(resp *http.Response) (int, string) {
	defer resp.Body.Close()
	var e apiError
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}
