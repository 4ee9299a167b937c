package ghclient

import (
	"net/http"
	"time"
)

// RetryAt reads, from the headers of a request GitHub refused for rate
// limiting (403 or 429) that RateLimit gave back rather than wait out,
// when it may be sent again: Retry-After, else the reset of a spent
// primary limit (x-ratelimit-remaining 0). ok is false when the headers
// name no such time. Callers that reschedule the request (a job, a
// rollout's next tick) use it instead of reading the headers again.
func RetryAt(h http.Header, now time.Time) (at time.Time, ok bool) {
	if d, ok := retryAfter(h, now); ok {
		return now.Add(d), true
	}
	if reset, ok := exhausted(h); ok {
		return reset.Add(resetMargin), true
	}
	return time.Time{}, false
}
