package ghclient

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-github/v66/github"
)

// configServer serves .github/ripcord.yml with an ETag and answers 304 to a
// matching If-None-Match, as GitHub does.
func configServer(t *testing.T, content func() (etag, body string)) (*script, string) {
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		etag, body := content()
		w.Header().Set("X-RateLimit-Remaining", "4000")
		if r.Header.Get("If-None-Match") == etag {
			w.Header().Set("ETag", etag)
			w.Header().Set("X-RateLimit-Remaining", "3999")
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		writeJSON(w, http.StatusOK, `{"type":"file","encoding":"base64","path":".github/ripcord.yml","content":"`+body+`"}`)
	})
	return srv, ts.URL
}

func readConfig(t *testing.T, c *github.Client) (string, *github.Response) {
	t.Helper()
	file, _, resp, err := c.Repositories.GetContents(context.Background(), "acme", "api", ".github/ripcord.yml", nil)
	if err != nil {
		t.Fatalf("get config: %v", err)
	}
	content, err := file.GetContent()
	if err != nil {
		t.Fatalf("decode config: %v", err)
	}
	return content, resp
}

func TestCache_SecondReadIsA304AndTheCallerStillGetsTheBody(t *testing.T) {
	counter := &Counter{}
	metrics, err := Metrics(MetricsConfig{Counter: counter})
	if err != nil {
		t.Fatal(err)
	}
	srv, url := configServer(t, func() (string, string) { return `"v1"`, "cmV0cnk6IDM=" }) // "retry: 3"
	c := client(t, url, "1", Cache(CacheConfig{}), metrics)

	first, _ := readConfig(t, c)
	second, resp := readConfig(t, c)

	if first != "retry: 3" || second != "retry: 3" {
		t.Fatalf("config read as %q then %q, want %q twice", first, second, "retry: 3")
	}
	if got := srv.request(1).Header.Get("If-None-Match"); got != `"v1"` {
		t.Fatalf("second read sent If-None-Match %q, want %q", got, `"v1"`)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get(CacheHeader) != "revalidated" || resp.Rate.Remaining != 3999 {
		t.Fatalf("caller got status %d, %s %q, remaining %d; want 200, revalidated, the 304's 3999",
			resp.StatusCode, CacheHeader, resp.Header.Get(CacheHeader), resp.Rate.Remaining)
	}
	route := "/repos/{owner}/{repo}/contents/{path}"
	if counter.Count(route, "GET", 200) != 1 || counter.Count(route, "GET", 304) != 1 {
		t.Fatalf("counted:\n%s\nwant one 200 and one 304", counter)
	}
}

func TestCache_ChangedFileIsReadAfresh(t *testing.T) {
	var mu sync.Mutex
	etag, body := `"v1"`, "cmV0cnk6IDM=" // "retry: 3"
	_, url := configServer(t, func() (string, string) {
		mu.Lock()
		defer mu.Unlock()
		return etag, body
	})
	c := client(t, url, "1", Cache(CacheConfig{}))

	readConfig(t, c)
	mu.Lock()
	etag, body = `"v2"`, "cmV0cnk6IDU=" // "retry: 5"
	mu.Unlock()
	if got, _ := readConfig(t, c); got != "retry: 5" {
		t.Fatalf("after the edit read %q, want %q", got, "retry: 5")
	}
	if got, resp := readConfig(t, c); got != "retry: 5" || resp.Header.Get(CacheHeader) != "revalidated" {
		t.Fatalf("third read %q (%s %q), want the new body from the cache", got, CacheHeader, resp.Header.Get(CacheHeader))
	}
}

func TestCache_BodiesAreNotSharedAcrossIdentities(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second func(c *github.Client)
	}{
		{"another installation", func(c *github.Client) { c.UserAgent = "ripcord/test (installation: 2)" }},
		{"a client go-githubapp did not label and no token shows", func(c *github.Client) { c.UserAgent = "ripcord/test (oauth token)" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, url := configServer(t, func() (string, string) { return `"v1"`, "eDogMQ==" })
			cache := Cache(CacheConfig{})
			readConfig(t, client(t, url, "1", cache))
			other := client(t, url, "1", cache)
			tc.second(other)
			readConfig(t, other)
			if got := srv.request(1).Header.Get("If-None-Match"); got != "" {
				t.Fatalf("%s revalidated installation 1's copy (If-None-Match %q)", tc.name, got)
			}
		})
	}
}

func TestCache_RawAndJSONOfOnePathAreKeptApart(t *testing.T) {
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"`+r.Header.Get("Accept")+`"`)
		if r.Header.Get("If-None-Match") == `"`+r.Header.Get("Accept")+`"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeJSON(w, http.StatusOK, `{}`)
	})
	c := client(t, ts.URL, "1", Cache(CacheConfig{}))
	get := func(accept string) {
		req, err := c.NewRequest("GET", "repos/acme/api/contents/a.yml", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", accept)
		if _, err := c.Do(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
	}
	get("application/vnd.github.raw")
	get("application/vnd.github+json")
	if got := srv.request(1).Header.Get("If-None-Match"); got != "" {
		t.Fatalf("a JSON read revalidated the raw copy (If-None-Match %q)", got)
	}
}

func TestCache_ResponsesThatMustNotBeKept(t *testing.T) {
	big := `"` + strings.Repeat("x", 100) + `"`
	for _, tc := range []struct {
		name   string
		etag   string
		body   string
		config CacheConfig
	}{
		{"no ETag", "", `{}`, CacheConfig{}},
		{"body larger than one entry may be", `"big"`, big, CacheConfig{MaxEntryBytes: 50}},
		{"body larger than the whole cache", `"big"`, big, CacheConfig{MaxBytes: 150}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				if tc.etag != "" {
					w.Header().Set("ETag", tc.etag)
				}
				writeJSON(w, http.StatusOK, tc.body)
			})
			c := client(t, ts.URL, "1", Cache(tc.config))
			for i := 0; i < 2; i++ {
				req, _ := c.NewRequest("GET", "repos/acme/api", nil)
				resp, err := c.BareDo(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if string(raw) != tc.body {
					t.Fatalf("read %d: body %q, want %q whole", i+1, raw, tc.body)
				}
			}
			if got := srv.request(1).Header.Get("If-None-Match"); got != "" {
				t.Fatalf("second read sent If-None-Match %q for a response that was not to be kept", got)
			}
		})
	}
}

func TestCache_FileThatDisappearsIsForgotten(t *testing.T) {
	var gone atomic.Bool
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if gone.Load() {
			writeJSON(w, http.StatusNotFound, `{"message":"Not Found"}`)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		writeJSON(w, http.StatusOK, `{"type":"file","content":""}`)
	})
	c := client(t, ts.URL, "1", Cache(CacheConfig{}))
	read := func() error {
		_, _, _, err := c.Repositories.GetContents(context.Background(), "acme", "api", "a.yml", nil)
		return err
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	gone.Store(true)
	if err := read(); err == nil {
		t.Fatal("a deleted file still read")
	}
	gone.Store(false)
	if err := read(); err != nil {
		t.Fatal(err)
	}
	if got := srv.request(2).Header.Get("If-None-Match"); got != "" {
		t.Fatalf("after a 404 the old copy was revalidated (If-None-Match %q)", got)
	}
}

func TestLRU_DropsTheLeastRecentlyUsedByBytes(t *testing.T) {
	entry := func(key string) *cacheEntry { return newCacheEntry(key, `"e"`, nil, make([]byte, 100)) }
	size := entry("a").size
	c := newLRU(3 * size)
	c.put(entry("a"))
	c.put(entry("b"))
	c.put(entry("c"))
	c.get("a") // a is now the most recently used; b the least
	c.put(entry("d"))

	if _, ok := c.get("b"); ok {
		t.Fatal("b, the least recently used, was kept")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.get(k); !ok {
			t.Fatalf("%s was dropped", k)
		}
	}
	if n, bytes := c.stats(); n != 3 || bytes != 3*size {
		t.Fatalf("holds %d entries, %d bytes; want 3, %d", n, bytes, 3*size)
	}
	c.put(entry("a")) // replacing must not count a twice
	if _, bytes := c.stats(); bytes != 3*size {
		t.Fatalf("after replacing a: %d bytes, want %d", bytes, 3*size)
	}
}
