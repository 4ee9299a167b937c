package ghclient

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/palantir/go-githubapp/githubapp"
)

// Defaults for CacheConfig.
const (
	DefaultCacheBytes      = 32 << 20
	DefaultCacheEntryBytes = 1 << 20
)

// CacheConfig bounds Cache. A zero field takes its default.
type CacheConfig struct {
	// MaxBytes bounds the whole cache, shared by all installations.
	MaxBytes int64
	// MaxEntryBytes bounds one body; larger ones (logs, archives) pass
	// through uncached.
	MaxEntryBytes int64
}

// CacheHeader marks a response that Cache rebuilt from its store after
// GitHub answered 304; its value is "revalidated".
const CacheHeader = "X-Ripcord-Cache"

// Cache keeps the bodies of GET responses that carry an ETag, per scope
// (installation), and revalidates every repeated GET with If-None-Match.
// GitHub answers 304 when nothing changed, which costs no rate limit, and
// Cache hands go-github the stored body as a normal 200. It never answers
// from the store without asking GitHub, so a config file edited a second ago
// is seen at once.
//
// Why not go-githubapp's WithClientCaching: its httpcache transport sits
// under the installation transport, out of reach of these middlewares, and
// marks a 304 and an unrevalidated hit alike (X-From-Cache), so 304s cannot
// be counted; it serves max-age=60 responses without asking unless
// alwaysValidate; and its memory store has no size bound.
func Cache(cfg CacheConfig) githubapp.ClientMiddleware {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultCacheBytes
	}
	if cfg.MaxEntryBytes <= 0 {
		cfg.MaxEntryBytes = DefaultCacheEntryBytes
	}
	c := &etagCache{store: newLRU(cfg.MaxBytes), maxEntry: cfg.MaxEntryBytes}
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			return c.roundTrip(next, req)
		})
	}
}

type etagCache struct {
	store    *lru
	maxEntry int64
}

func (c *etagCache) roundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	key, ok := cacheKey(req)
	if !ok {
		return next.RoundTrip(req)
	}
	entry, hit := c.store.get(key)
	out := req
	if hit {
		out = req.Clone(req.Context())
		out.Header.Set("If-None-Match", entry.etag)
	}
	resp, err := next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && hit:
		discard(resp)
		return entry.response(req, resp), nil
	case resp.StatusCode == http.StatusOK:
		return c.keep(key, resp), nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		c.store.remove(key) // gone or forbidden now: the body must not come back
	}
	return resp, nil
}

// cacheKey is the identity a body is stored under: the scope, the
// representation asked for, and the URL. Requests that are not plain GETs
// of a known scope are not cached: a body must never reach another identity.
func cacheKey(req *http.Request) (string, bool) {
	if req.Method != http.MethodGet || req.Header.Get("Range") != "" ||
		req.Header.Get("If-None-Match") != "" || req.Header.Get("If-Modified-Since") != "" {
		return "", false
	}
	scope := Scope(req)
	if scope == "" {
		return "", false
	}
	return scope + "\n" + req.Header.Get("Accept") + "\n" + req.Header.Get("Accept-Encoding") + "\n" +
		req.Header.Get("X-GitHub-Api-Version") + "\n" + req.URL.String(), true
}

// keep stores a 200 that carries an ETag and is small enough, and returns
// it with its body readable again.
func (c *etagCache) keep(key string, resp *http.Response) *http.Response {
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.ContentLength > c.maxEntry {
		c.store.remove(key)
		return resp
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxEntry+1))
	if err != nil || int64(len(body)) > c.maxEntry {
		c.store.remove(key)
		// Hand the caller what was read, then the rest or the read error.
		rest := resp.Body
		if err != nil {
			rest = io.NopCloser(errReader{err})
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), rest), resp.Body}
		return resp
	}
	_ = resp.Body.Close()
	c.store.put(newCacheEntry(key, etag, resp.Header.Clone(), body))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}

// response is the stored 200 with the headers of the fresh 304 laid over
// it, so that go-github reads current rate-limit numbers.
func (e *cacheEntry) response(req *http.Request, notModified *http.Response) *http.Response {
	h := e.header.Clone()
	for k, vs := range notModified.Header {
		switch k {
		case "Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding":
			continue
		}
		h[k] = vs
	}
	h.Set("Content-Length", strconv.Itoa(len(e.body)))
	h.Set(CacheHeader, "revalidated")
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         notModified.Proto,
		ProtoMajor:    notModified.ProtoMajor,
		ProtoMinor:    notModified.ProtoMinor,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(e.body)),
		ContentLength: int64(len(e.body)),
		Request:       req,
		TLS:           notModified.TLS,
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
