package ghlimit

import (
	"errors"
	"net/http"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
)

// Lifts reports whether err is GitHub's refusal for a rate limit that the
// client (app/ghclient) gave back rather than wait out, and when it lifts:
// the time to send the request again. GitHub said "later", not "no":
// nothing was done, so a caller reschedules the work for at instead of
// counting it a failure.
//
// go-github reports a spent primary limit as *github.RateLimitError and a
// secondary one as *github.AbuseRateLimitError; a 429, a 403 whose headers
// name a time, or a 403 whose message names the secondary limit without
// its documentation link stays an *github.ErrorResponse; the App's request
// for an installation token fails with ghinstallation's *HTTPError. The
// time is the one RetryAt reads (Retry-After, else the reset plus
// ResetMargin), else go-github's, else SecondaryLimitWait from now. A
// write the client held back itself, its pace running past the caller's
// deadline (*PacedError), lifts at the time the pace lets it go, which is
// named as GitHub's are.
//
// named says GitHub named a time still ahead: only that is worth passing on
// as when to come back (an API's Retry-After). A named time that is not
// ahead (GitHub's clock is behind ours, or go-github's memory of a limit
// outlived it) lifts SecondaryLimitWait from now too: sending at once
// would meet the same refusal, over and over.
func Lifts(err error, now time.Time) (at time.Time, named, limited bool) {
	at, named, limited = lifts(err, now)
	if limited && !at.After(now) {
		return now.Add(SecondaryLimitWait), false, true
	}
	return at, named, limited
}

func lifts(err error, now time.Time) (at time.Time, named, limited bool) {
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var er *github.ErrorResponse
	var he *ghinstallation.HTTPError
	var paced *PacedError
	var resp *http.Response
	switch {
	case errors.As(err, &paced):
		return paced.At, true, true
	case errors.As(err, &rl):
		if at, ok := retryAt(rl.Response, now); ok {
			return at, true, true
		}
		return rl.Rate.Reset.Add(ResetMargin), true, true
	case errors.As(err, &abuse):
		if at, ok := retryAt(abuse.Response, now); ok {
			return at, true, true
		}
		if abuse.RetryAfter != nil {
			return now.Add(*abuse.RetryAfter), true, true
		}
		return now.Add(SecondaryLimitWait), false, true
	case errors.As(err, &er):
		resp = er.Response
		if resp != nil && resp.StatusCode == http.StatusForbidden && NamesSecondaryLimit([]byte(er.Message)) {
			if at, ok := RetryAt(resp.Header, now); ok {
				return at, true, true
			}
			return now.Add(SecondaryLimitWait), false, true
		}
	case errors.As(err, &he):
		resp = he.Response
	}
	if resp == nil || (resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests) {
		return time.Time{}, false, false
	}
	if at, ok := RetryAt(resp.Header, now); ok {
		return at, true, true
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return now.Add(SecondaryLimitWait), false, true
	}
	return time.Time{}, false, false // a 403 that is no rate limit: a refusal
}

func retryAt(resp *http.Response, now time.Time) (time.Time, bool) {
	if resp == nil {
		return time.Time{}, false
	}
	return RetryAt(resp.Header, now)
}

// MaxSnooze bounds how long a job waits for a rate limit at a time: a
// reset is at most an hour away, and a time further out (a clock far off,
// a header misread) must not park the job for longer; it asks again then.
const MaxSnooze = time.Hour

// Snooze is how long a job waits for a limit that lifts at at: never past
// MaxSnooze, and never under a second.
func Snooze(at, now time.Time) time.Duration {
	return min(max(at.Sub(now), time.Second), MaxSnooze)
}

// Limited reports whether err is a rate limit Lifts reads, whenever it
// lifts: GitHub's "later", not "no". A caller that sorts GitHub's 4xx
// answers into refusals (not asked again) asks it first, as a 403 can be
// either.
func Limited(err error) bool {
	_, _, limited := lifts(err, time.Time{})
	return limited
}
