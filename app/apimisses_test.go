package app

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A path under /api/v1 that names no endpoint, or a method its endpoint
// does not take, is answered in JSON as every other API error is, naming
// the path and the method; a 405 keeps its Allow header. Paths outside
// the API keep Go's answers.
func TestAPIMissesAnswerJSON(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	for _, c := range []struct {
		name, method, path string
		status             int
		allow              string   // the Allow header of a 405
		says               []string // in the JSON error
	}{
		{"an unknown path", "GET", "/api/v1/nothing", http.StatusNotFound, "", []string{"/api/v1/nothing"}},
		{"a POST to an unknown path", "POST", "/api/v1/nothing", http.StatusNotFound, "", []string{"/api/v1/nothing"}},
		{"the API's root", "GET", "/api/v1", http.StatusNotFound, "", []string{"/api/v1"}},
		{"a release id with its / unescaped", "GET", "/api/v1/releases/checkout-v42:prod-eu/prod/audit", http.StatusNotFound, "",
			[]string{"/api/v1/releases/checkout-v42:prod-eu/prod/audit", "%2F"}},
		{"DELETE on a list", "DELETE", "/api/v1/deliveries", http.StatusMethodNotAllowed, "GET, HEAD",
			[]string{"DELETE", "/api/v1/deliveries"}},
		{"POST on a release", "POST", "/api/v1/releases/r1", http.StatusMethodNotAllowed, "GET, HEAD",
			[]string{"POST", "/api/v1/releases/r1"}},
		{"GET on rollbacks", "GET", "/api/v1/rollbacks", http.StatusMethodNotAllowed, "POST", []string{"GET", "/api/v1/rollbacks"}},
		{"PUT on releases", "PUT", "/api/v1/releases", http.StatusMethodNotAllowed, "GET, HEAD, POST", []string{"PUT", "/api/v1/releases"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := send(t, c.method, ts.URL+c.path)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if got := resp.Header.Get("Allow"); got != c.allow {
				t.Errorf("Allow %q, want %q", got, c.allow)
			}
			var e apiError
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" || json.Unmarshal(body, &e) != nil || e.Error == "" {
				t.Fatalf("answer is not the API's JSON error (Content-Type %q): %s", ct, body)
			}
			for _, s := range c.says {
				if !strings.Contains(e.Error, s) {
					t.Errorf("error %q does not name %q", e.Error, s)
				}
			}
		})
	}
	// The API's routes still answer as before, and the pages' paths keep
	// Go's plain answers.
	for _, c := range []struct {
		method, path, contentType string
		status                    int
	}{
		{"GET", "/api/v1/deliveries", "application/json", http.StatusUnauthorized},
		{"GET", "/nothing-here", "text/plain; charset=utf-8", http.StatusNotFound},
		{"GET", "/healthz", "", http.StatusOK},
	} {
		resp := send(t, c.method, ts.URL+c.path)
		resp.Body.Close()
		if resp.StatusCode != c.status || (c.contentType != "" && resp.Header.Get("Content-Type") != c.contentType) {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.status, c.contentType)
		}
	}
}

func send(t *testing.T, method, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
