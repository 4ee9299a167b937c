package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// retryAfterServer answers each request with the next of answers (a
// status and a Retry-After, "" for none), then 200, recording when each
// request arrived.
type retryAfterServer struct {
	mu      sync.Mutex
	answers []struct{ status, retryAfter string }
	arrived []time.Time
}

func (s *retryAfterServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.arrived = append(s.arrived, time.Now())
	if len(s.answers) == 0 {
		w.Write([]byte(`{}`))
		return
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	if a.status == "503" {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"GitHub's rate limit is spent: nothing was stored: send the same request again later","field":"repository"}`))
		return
	}
	w.WriteHeader(http.StatusBadGateway)
	w.Write([]byte(`{"error":"GitHub did not answer"}`))
}

func (s *retryAfterServer) requests() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrived...)
}

func retryAfterClient(t *testing.T, s *retryAfterServer, backoff time.Duration) *apiClient {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &apiClient{server: srv.URL, token: "t", http: srv.Client(), retries: 4, backoff: backoff}
}

// onTheClock is t0+wait on t0's clock, rounded up to unit: trying at the
// time a message says must never be too early.
func onTheClock(t0 time.Time, wait, unit time.Duration, layout string) string {
	at := t0.Add(wait)
	if r := at.Truncate(unit); r.Before(at) {
		at = r.Add(unit)
	}
	if y, m, d := t0.Date(); unit == time.Minute && (at.Day() != d || at.Month() != m || at.Year() != y) {
		layout = "Jan 2 " + layout // another day on the user's clock
	}
	return at.Format(layout)
}

// A wait that ends on another day of the user's clock names the day; one
// said to the second (under two minutes) never does.
func TestRetryHintNamesTheDayWhenTheWaitEndsOnAnother(t *testing.T) {
	zone := time.FixedZone("IST", 5*3600+1800)
	late := time.Date(2026, 12, 3, 23, 25, 10, 0, zone)
	for _, c := range []struct {
		now  time.Time
		wait time.Duration
		want string
	}{
		{late, 65 * time.Minute, "try again after Dec 4 00:31 IST (in 1 h 5 min)"},
		{late, 20 * time.Minute, "try again after 23:46 IST (in 20 min)"},
		{late.Add(34 * time.Minute), 90 * time.Second, "try again after 00:00:40 IST (in 90 s)"},
		{time.Date(2026, 12, 31, 23, 50, 0, 0, time.UTC), 42 * time.Minute, "try again after Jan 1 00:32 UTC (in 42 min)"},
	} {
		if got := retryHint(c.now, c.wait); got != c.want {
			t.Errorf("retryHint(%s, %s) = %q, want %q", c.now, c.wait, got, c.want)
		}
	}
}

// hasHint says whether err ends saying to try again after wait and in,
// the time read on the clock at a moment between before and after.
func hasHint(err error, before, after time.Time, wait time.Duration, in string) (bool, string) {
	unit, layout := time.Minute, "15:04 MST"
	if wait < 2*time.Minute {
		unit, layout = time.Second, "15:04:05 MST"
	}
	want := "try again after " + onTheClock(before, wait, unit, layout) + " (in " + in + ")"
	alt := "try again after " + onTheClock(after, wait, unit, layout) + " (in " + in + ")"
	return err != nil && (strings.HasSuffix(err.Error(), want) || strings.HasSuffix(err.Error(), alt)), want
}

type answer = struct{ status, retryAfter string }

// A 503 whose Retry-After is past what is left of the backoff (GitHub's
// rate limit, an hour away) is not asked again: the CLI asked four times
// more within 15 s, each answered the same, and never said when to come
// back. It stops at once and says when, on the user's clock.
func TestAPIClientStopsAtARetryAfterPastItsBackoff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		answers []answer
		wait    time.Duration
		in      string
	}{
		{"GitHub's rate limit at the first answer", []answer{{"503", "2520"}}, 42 * time.Minute, "42 min"},
		{"over an hour", []answer{{"503", "3900"}}, 65 * time.Minute, "1 h 5 min"},
		{"as an HTTP date", []answer{{"503", time.Now().Add(42*time.Minute + 30*time.Second).UTC().Format(http.TimeFormat)}},
			0, "43 min"},
		// 100 ms of backoff is 1.5 s in all; two plain 5xx spend 0.3 s of
		// it, and 2 s no longer fit in what is left.
		{"after the backoff spent some of its time", []answer{{"502", ""}, {"502", ""}, {"503", "2"}}, 2 * time.Second, "2 s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &retryAfterServer{answers: c.answers}
			cl := retryAfterClient(t, s, 100*time.Millisecond)
			before := time.Now()
			err := cl.do(context.Background(), "POST", "/api/v1/rollouts", []byte(`{}`), nil)
			after := time.Now()
			got := s.requests()
			if n := len(got); n != len(c.answers) {
				t.Fatalf("%d requests, want %d: the one whose Retry-After is past the backoff is the last", n, len(c.answers))
			}
			// The last answer came between its request and the return.
			before, wait := got[len(got)-1], c.wait
			if wait == 0 { // an HTTP date names the time itself
				at, err := http.ParseTime(c.answers[0].retryAfter)
				if err != nil {
					t.Fatal(err)
				}
				// The CLI reckons the wait from its own clock, up to a
				// second past the date, which names whole seconds: at a
				// date on the minute, the minute it names is the next.
				after, wait = before.Add(time.Second), at.Sub(before)
			}
			if ok, want := hasHint(err, before, after, wait, c.in); !ok || !strings.Contains(err.Error(), "server answered 503") {
				t.Errorf("error %v; want the 503 and %q", err, want)
			}
		})
	}
}

// A Retry-After that fits in what is left of the backoff is waited out,
// in place of the backoff's step, and the request is sent again.
func TestAPIClientWaitsOutAShortRetryAfter(t *testing.T) {
	t.Parallel()
	s := &retryAfterServer{answers: []answer{{"503", "2"}}}
	cl := retryAfterClient(t, s, time.Second)
	if err := cl.do(context.Background(), "GET", "/api/v1/releases", nil, nil); err != nil {
		t.Fatalf("do: %v; want the answer after the Retry-After", err)
	}
	got := s.requests()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2: the 503 and one after its Retry-After", len(got))
	}
	if waited := got[1].Sub(got[0]); waited < 2*time.Second {
		t.Errorf("sent again %s after the 503, before its Retry-After of 2 s (the backoff's first step is 1 s)", waited)
	}
}

// The last attempt's 503 says when to try again too, when it says.
func TestAPIClientSaysTheLastAnswersRetryAfter(t *testing.T) {
	t.Parallel()
	s := &retryAfterServer{answers: []answer{{"502", ""}, {"502", ""}, {"502", ""}, {"502", ""}, {"503", "30"}}}
	cl := retryAfterClient(t, s, time.Millisecond)
	err := cl.do(context.Background(), "GET", "/api/v1/releases", nil, nil)
	got := s.requests()
	if len(got) != 5 {
		t.Fatalf("%d requests, want 5", len(got))
	}
	if ok, want := hasHint(err, got[4], time.Now(), 30*time.Second, "30 s"); !ok {
		t.Errorf("error %v; want it to end %q", err, want)
	}
}

// The time is the user's: `ripcord` says it in the zone of TZ.
func TestRetryAfterIsSaidInTheUsersZone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	zone, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Skipf("no time zone database here: %v", err)
	}
	s := &retryAfterServer{answers: []answer{{"503", "3900"}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	before := time.Now().In(zone)
	code, _, stderr := ripcord(t, []string{"TZ=Asia/Kolkata", "RIPCORD_SERVER=" + srv.URL, "RIPCORD_API_TOKEN=t"}, "releases", "list")
	after := time.Now().In(zone)
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	ok, want := hasHint(errors.New(strings.TrimSpace(stderr)), before, after, 65*time.Minute, "1 h 5 min")
	if code != 1 || !ok || !strings.Contains(want, " IST ") {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}
