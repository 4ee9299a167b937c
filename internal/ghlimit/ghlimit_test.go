package ghlimit

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestRefusalWait(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	reset := strconv.FormatInt(now.Add(90*time.Second).Unix(), 10)
	for _, tc := range []struct {
		name    string
		status  int
		header  http.Header
		body    string
		wait    time.Duration
		limited bool
	}{
		{"secondary limit with Retry-After seconds", 403, h("Retry-After", "30"), secondaryBody, 30 * time.Second, true},
		{"429 with Retry-After as an HTTP date", 429, h("Retry-After", now.Add(time.Minute).UTC().Format(http.TimeFormat)), "", time.Minute, true},
		{"Retry-After wins over the reset", 403, h("Retry-After", "5", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset), "", 5 * time.Second, true},
		{"primary limit spent waits for reset plus margin", 403, h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset), "", 91 * time.Second, true},
		{"reset already past waits nothing", 403, h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1"), "", 0, true},
		{"secondary limit named only in the body waits a minute", 403, h(), secondaryBody, time.Minute, true},
		{"permission 403 is not a limit", 403, h("X-RateLimit-Remaining", "4000"), `{"message":"Resource not accessible by integration"}`, 0, false},
		{"remaining 0 without a reset is not a time", 403, h("X-RateLimit-Remaining", "0"), "", 0, false},
		{"a 200 is never a refusal", 200, h("Retry-After", "30"), "", 0, false},
		{"a 503 with Retry-After is Retry's business", 503, h("Retry-After", "30"), "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, limited := RefusalWait(tc.status, tc.header, []byte(tc.body), now)
			if wait != tc.wait || limited != tc.limited {
				t.Fatalf("RefusalWait = %v, %v; want %v, %v", wait, limited, tc.wait, tc.limited)
			}
		})
	}
}

// secondaryBody is GitHub's answer on a secondary-limit refusal without
// headers.
const secondaryBody = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`
