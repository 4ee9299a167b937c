package ghclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

const secondaryBody = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",` +
	`"documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`

func TestRateLimit_RetryAfterIsHonouredForAPost(t *testing.T) {
	clock := newFakeClock()
	srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "30")
			writeJSON(w, http.StatusForbidden, secondaryBody)
			return
		}
		writeJSON(w, http.StatusCreated, `{"id":9}`)
	})
	c := client(t, ts.URL, "1", RateLimit(RateLimitPolicy{Clock: clock}))

	got, _, err := c.Issues.CreateComment(context.Background(), "acme", "api", 7, &github.IssueComment{Body: github.String("hi")})
	if err != nil || got.GetID() != 9 {
		t.Fatalf("create comment: %v %v", got, err)
	}
	if srv.hits() != 2 || srv.body(1) != srv.body(0) {
		t.Fatalf("server saw %d requests with bodies %q, %q; want the same comment twice", srv.hits(), srv.body(0), srv.body(1))
	}
	if fmt.Sprint(clock.Sleeps()) != "[30s]" {
		t.Fatalf("waits %v, want [30s]", clock.Sleeps())
	}
}

func TestRateLimit_ResetIsHonouredWhenThePrimaryLimitIsSpent(t *testing.T) {
	clock := newFakeClock()
	reset := clock.Now().Add(45 * time.Second)
	srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
			writeJSON(w, http.StatusForbidden, `{"message":"API rate limit exceeded for installation ID 1."}`)
			return
		}
		w.Header().Set("X-RateLimit-Remaining", "4999")
		writeJSON(w, http.StatusOK, `{"full_name":"acme/api"}`)
	})
	c := client(t, ts.URL, "1", RateLimit(RateLimitPolicy{Clock: clock}))

	if _, _, err := c.Repositories.Get(context.Background(), "acme", "api"); err != nil {
		t.Fatalf("get repo: %v", err)
	}
	if srv.hits() != 2 || fmt.Sprint(clock.Sleeps()) != "[46s]" {
		t.Fatalf("got %d requests, waits %v; want 2 and [46s] (reset + 1s margin)", srv.hits(), clock.Sleeps())
	}
}

func TestRateLimit_SecondaryLimitWithoutHeadersWaitsAMinute(t *testing.T) {
	clock := newFakeClock()
	srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			writeJSON(w, http.StatusForbidden, secondaryBody)
			return
		}
		writeJSON(w, http.StatusOK, `{}`)
	})
	c := client(t, ts.URL, "1", RateLimit(RateLimitPolicy{Clock: clock}))

	if _, _, err := c.Repositories.Get(context.Background(), "acme", "api"); err != nil {
		t.Fatalf("get repo: %v", err)
	}
	if srv.hits() != 2 || fmt.Sprint(clock.Sleeps()) != "[1m0s]" {
		t.Fatalf("got %d requests, waits %v; want 2 and [1m0s]", srv.hits(), clock.Sleeps())
	}
}

func TestRateLimit_PermissionRefusalIsNotWaitedOn(t *testing.T) {
	clock := newFakeClock()
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusForbidden, `{"message":"Resource not accessible by integration"}`)
	})
	c := client(t, ts.URL, "1", RateLimit(RateLimitPolicy{Clock: clock}))

	_, _, err := c.Repositories.Get(context.Background(), "acme", "api")
	var ge *github.ErrorResponse
	if !errors.As(err, &ge) || ge.Message != "Resource not accessible by integration" {
		t.Fatalf("want GitHub's refusal with its message intact, got %v", err)
	}
	if srv.hits() != 1 || len(clock.Sleeps()) != 0 {
		t.Fatalf("got %d requests and waits %v; want 1 and none", srv.hits(), clock.Sleeps())
	}
}

func TestRateLimit_WaitLongerThanMaxWaitIsReturnedToTheCaller(t *testing.T) {
	clock := newFakeClock()
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "600")
		writeJSON(w, http.StatusForbidden, secondaryBody)
	})
	c := client(t, ts.URL, "1", RateLimit(RateLimitPolicy{Clock: clock}))

	_, _, err := c.Repositories.Get(context.Background(), "acme", "api")
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != 10*time.Minute {
		t.Fatalf("want go-github's AbuseRateLimitError with RetryAfter 10m, got %v", err)
	}
	if srv.hits() != 1 || len(clock.Sleeps()) != 0 {
		t.Fatalf("got %d requests and waits %v; want 1 and none", srv.hits(), clock.Sleeps())
	}
}

// The primary limit is per installation, so once GitHub says it is spent,
// another client of the same installation must not spend a request to learn
// it again; another installation is unaffected.
func TestRateLimit_SpentPrimaryLimitHoldsBackTheInstallation(t *testing.T) {
	clock := newFakeClock()
	reset := clock.Now().Add(time.Hour)
	srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		}
		writeJSON(w, http.StatusOK, `{}`)
	})
	limit := RateLimit(RateLimitPolicy{Clock: clock})
	if _, _, err := client(t, ts.URL, "1", limit).Repositories.Get(context.Background(), "acme", "api"); err != nil {
		t.Fatalf("last allowed call: %v", err)
	}

	_, _, err := client(t, ts.URL, "1", limit).Repositories.Get(context.Background(), "acme", "api")
	var rle *github.RateLimitError
	if !errors.As(err, &rle) || !rle.Rate.Reset.Time.Equal(reset) {
		t.Fatalf("want a RateLimitError resetting at %v without a request, got %v", reset, err)
	}
	if srv.hits() != 1 {
		t.Fatalf("server saw %d requests, want 1: the held-back one must not be sent", srv.hits())
	}
	if _, _, err := client(t, ts.URL, "2", limit).Repositories.Get(context.Background(), "acme", "api"); err != nil || srv.hits() != 2 {
		t.Fatalf("installation 2 must not be held back: err %v, %d requests", err, srv.hits())
	}
}

func TestRateLimit_SpentPrimaryLimitResettingSoonIsWaitedFor(t *testing.T) {
	clock := newFakeClock()
	reset := clock.Now().Add(20 * time.Second)
	srv, ts := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		}
		writeJSON(w, http.StatusOK, `{}`)
	})
	limit := RateLimit(RateLimitPolicy{Clock: clock})
	for i := 0; i < 2; i++ {
		if _, _, err := client(t, ts.URL, "1", limit).Repositories.Get(context.Background(), "acme", "api"); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if srv.hits() != 2 || fmt.Sprint(clock.Sleeps()) != "[21s]" {
		t.Fatalf("got %d requests, waits %v; want 2 and [21s]", srv.hits(), clock.Sleeps())
	}
}

// A wait that would end after the request's deadline is not started: the
// caller gets GitHub's refusal now, with its retry time, rather than a
// bare "context deadline exceeded" once its time is spent waiting.
func TestRateLimit_WaitPastTheDeadlineIsReturnedToTheCaller(t *testing.T) {
	clock := newFakeClock()
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "60")
		writeJSON(w, http.StatusForbidden, secondaryBody)
	})
	c := client(t, ts.URL, "1", RateLimit(RateLimitPolicy{Clock: clock}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, _, err := c.Repositories.Get(ctx, "acme", "api")
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != time.Minute {
		t.Fatalf("want go-github's AbuseRateLimitError with RetryAfter 1m, got %v", err)
	}
	if srv.hits() != 1 || len(clock.Sleeps()) != 0 {
		t.Fatalf("got %d requests and waits %v; want 1 and none", srv.hits(), clock.Sleeps())
	}
}
