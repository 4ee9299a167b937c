// Package ghlimit reads GitHub's rate-limit answers: when a request GitHub
// refused for rate limiting may be sent again, and whether a 403 is such a
// refusal at all. The GitHub client's middleware (app/ghclient) waits with
// it; callers that reschedule work instead (jobs, rollouts, rollback pull
// requests) ask it when.
package ghlimit

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SecondaryLimitWait is how long to wait on a secondary-limit refusal that
// names no time: GitHub's documentation says at least a minute.
const SecondaryLimitWait = time.Minute

// ResetMargin is added to x-ratelimit-reset, which has whole seconds and
// GitHub's clock.
const ResetMargin = time.Second

// RetryAfter reads Retry-After, in seconds or as an HTTP date.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Exhausted reports that the primary rate limit is spent, and when it
// resets: x-ratelimit-remaining is 0 and x-ratelimit-reset is a Unix time.
// Any response can say so, a 200 included: it was the last call allowed.
func Exhausted(h http.Header) (time.Time, bool) {
	if strings.TrimSpace(h.Get("X-RateLimit-Remaining")) != "0" {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}

// RefusalWait says how long GitHub asks us to wait before repeating a
// request it refused for rate limiting, in the order GitHub documents:
// Retry-After; else a spent primary limit until its reset; else a body that
// names the secondary limit, a minute. Any other 403 is a permission
// refusal and limited is false. body may be nil when the headers decide.
func RefusalWait(status int, h http.Header, body []byte, now time.Time) (wait time.Duration, limited bool) {
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return 0, false
	}
	if d, ok := RetryAfter(h, now); ok {
		return d, true
	}
	if reset, ok := Exhausted(h); ok {
		return max(reset.Add(ResetMargin).Sub(now), 0), true
	}
	if NamesSecondaryLimit(body) {
		return SecondaryLimitWait, true
	}
	return 0, false
}

// NeedsBody reports whether RefusalWait needs the body to decide.
func NeedsBody(status int, h http.Header) bool {
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return false
	}
	if _, ok := RetryAfter(h, time.Time{}); ok {
		return false
	}
	_, ok := Exhausted(h)
	return !ok
}

// RetryAt reads, from the headers of a request GitHub refused for rate
// limiting (403 or 429) that the client gave back rather than wait out,
// when it may be sent again: Retry-After, else the reset of a spent
// primary limit (x-ratelimit-remaining 0). ok is false when the headers
// name no such time. Callers that reschedule the request (a job, a
// rollout's next tick) use it instead of reading the headers again.
func RetryAt(h http.Header, now time.Time) (at time.Time, ok bool) {
	if d, ok := RetryAfter(h, now); ok {
		return now.Add(d), true
	}
	if reset, ok := Exhausted(h); ok {
		return reset.Add(ResetMargin), true
	}
	return time.Time{}, false
}

// NamesSecondaryLimit reports whether a refusal's message names GitHub's
// secondary rate limit, which it may do without any header saying when.
func NamesSecondaryLimit(message []byte) bool {
	return bytes.Contains(bytes.ToLower(message), []byte("secondary rate limit"))
}
