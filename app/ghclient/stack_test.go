package ghclient

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// In the whole stack a 429 with Retry-After meets both RateLimit and
// Retry; it must be waited out once, not twice.
func TestStack_SecondaryLimitIsWaitedOutOnce(t *testing.T) {
	clock := newFakeClock()
	counter := &Counter{}
	srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "5")
			writeJSON(w, http.StatusTooManyRequests, secondaryBody)
			return
		}
		writeJSON(w, http.StatusOK, `{"full_name":"acme/api"}`)
	})
	c := client(t, ts.URL, "1", stack(t, Config{Counter: counter, Clock: clock})...)

	if _, _, err := c.Repositories.Get(context.Background(), "acme", "api"); err != nil {
		t.Fatalf("get repo: %v", err)
	}
	if srv.hits() != 2 || fmt.Sprint(clock.Sleeps()) != "[5s]" {
		t.Fatalf("got %d requests, waits %v; want 2 and [5s]", srv.hits(), clock.Sleeps())
	}
	if counter.Count("/repos/{owner}/{repo}", "GET", 429) != 1 || counter.Count("/repos/{owner}/{repo}", "GET", 200) != 1 {
		t.Fatalf("counted:\n%s\nwant one 429 and one 200", counter)
	}
}
