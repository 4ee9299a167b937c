package ghclient

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// memoryGitHub answers in memory, the way GitHub does for the calls that
// matter here: a GET carries an ETag and is a 304 when revalidated, a POST
// is a 201.
var memoryGitHub = roundTripperFunc(func(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("X-RateLimit-Remaining", "4999")
	status, body := http.StatusCreated, `{"id":1}`
	if req.Method == http.MethodGet {
		h.Set("ETag", `"v1"`)
		status, body = http.StatusOK, `{"type":"file","content":"cmV0cnk6IDM="}`
		if req.Header.Get("If-None-Match") == `"v1"` {
			status, body = http.StatusNotModified, ""
		}
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
})

// BenchmarkStack measures what the middlewares add to one request, with
// GitHub answering from memory: compare "bare" with "stack".
func BenchmarkStack(b *testing.B) {
	mws, err := Middlewares(Config{Counter: &Counter{}, Clock: newFakeClock()})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		rt     http.RoundTripper
		method string
		path   string
	}{
		{"bare/GET", memoryGitHub, http.MethodGet, "/repos/acme/api/contents/.github/ripcord.yml"},
		{"stack/GET revalidated", Wrap(memoryGitHub, mws...), http.MethodGet, "/repos/acme/api/contents/.github/ripcord.yml"},
		{"bare/POST", memoryGitHub, http.MethodPost, "/repos/acme/api/actions/runs/42/rerun-failed-jobs"},
		{"stack/POST paced", Wrap(memoryGitHub, mws...), http.MethodPost, "/repos/acme/api/actions/runs/42/rerun-failed-jobs"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				req, err := http.NewRequest(bc.method, "https://api.github.com"+bc.path, strings.NewReader(`{}`))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("User-Agent", "ripcord/bench (installation: 1)")
				resp, err := bc.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
