package ghclient

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// secondaryLimitWait is how long to wait on a secondary-limit refusal that
// names no time: GitHub's documentation says at least a minute.
const secondaryLimitWait = time.Minute

// resetMargin is added to x-ratelimit-reset, which has whole seconds and
// GitHub's clock.
const resetMargin = time.Second

// retryAfter reads Retry-After, in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
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

// exhausted reports that the primary rate limit is spent, and when it
// resets: x-ratelimit-remaining is 0 and x-ratelimit-reset is a Unix time.
// Any response can say so, a 200 included: it was the last call allowed.
func exhausted(h http.Header) (time.Time, bool) {
	if strings.TrimSpace(h.Get("X-RateLimit-Remaining")) != "0" {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}

// refusalWait says how long GitHub asks us to wait before repeating a
// request it refused for rate limiting, in the order GitHub documents:
// Retry-After; else a spent primary limit until its reset; else a body that
// names the secondary limit, a minute. Any other 403 is a permission
// refusal and limited is false. body may be nil when the headers decide.
func refusalWait(status int, h http.Header, body []byte, now time.Time) (wait time.Duration, limited bool) {
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return 0, false
	}
	if d, ok := retryAfter(h, now); ok {
		return d, true
	}
	if reset, ok := exhausted(h); ok {
		return max(reset.Add(resetMargin).Sub(now), 0), true
	}
	if bytes.Contains(bytes.ToLower(body), []byte("secondary rate limit")) {
		return secondaryLimitWait, true
	}
	return 0, false
}

// needsBody reports whether refusalWait needs the body to decide.
func needsBody(status int, h http.Header) bool {
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return false
	}
	if _, ok := retryAfter(h, time.Time{}); ok {
		return false
	}
	_, ok := exhausted(h)
	return !ok
}
