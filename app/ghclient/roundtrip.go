package ghclient

import (
	"fmt"
	"io"
	"net/http"

	"github.com/palantir/go-githubapp/githubapp"
)

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Wrap puts mws around rt, the first outermost, which is the order
// githubapp.WithClientMiddleware applies them in. It is how a test puts the
// stack on top of go-github-mock's client.
func Wrap(rt http.RoundTripper, mws ...githubapp.ClientMiddleware) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	for i := len(mws) - 1; i >= 0; i-- {
		rt = mws[i](rt)
	}
	return rt
}

// isWrite reports whether GitHub counts a request of this method as
// content-creating for its secondary rate limit.
func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// replayable reports whether req can be sent again: it has no body, or a
// GetBody that yields a fresh copy of it.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// again returns a copy of req with a fresh body, for one more attempt. A
// RoundTripper must not change the request it was given, and the transport
// has consumed the body of the previous attempt.
func again(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return r, nil
	}
	if req.GetBody == nil {
		return nil, fmt.Errorf("repeat %s %s: request body cannot be replayed (no GetBody)", req.Method, req.URL.Path)
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("repeat %s %s: get request body: %w", req.Method, req.URL.Path, err)
	}
	r.Body = body
	return r, nil
}

// discard reads a little of a response we are about to drop, so that the
// connection can be reused, and closes it.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	_ = resp.Body.Close()
}
