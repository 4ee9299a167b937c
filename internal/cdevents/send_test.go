package cdevents

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"

	"github.com/ripcord/ripcord/records"
)

func testEvent(t *testing.T) cloudevents.Event {
	t.Helper()
	rec := promote()
	ev, err := Build(records.Effect{Kind: records.EffectCDEvent, Type: records.CDEventServiceUpgraded,
		Key: "cdevent/upgraded/" + rec.ReleaseID, ReleaseID: rec.ReleaseID}, rec, source, t0)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestSinkAnswersAreClassified(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		wantErr   bool
		retryable bool
	}{
		{"accepted is delivered", http.StatusAccepted, false, false},
		{"no content is delivered", http.StatusNoContent, false, false},
		{"server error is an outage, retried", http.StatusInternalServerError, true, true},
		{"bad gateway in front of the sink, retried", http.StatusBadGateway, true, true},
		{"sink unavailable, retried", http.StatusServiceUnavailable, true, true},
		{"rate limited, retried", http.StatusTooManyRequests, true, true},
		{"sink timed out reading, retried", http.StatusRequestTimeout, true, true},
		{"sink refuses the event, reported not retried", http.StatusBadRequest, true, false},
		{"sink wants credentials, reported not retried", http.StatusUnauthorized, true, false},
		{"sink path is wrong, reported not retried", http.StatusNotFound, true, false},
		{"sink does not take the media type, reported not retried", http.StatusUnsupportedMediaType, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.WriteHeader(tc.status)
				fmt.Fprint(w, "  reason from the sink\n")
			}))
			defer srv.Close()
			err := Sender{Client: srv.Client()}.Send(context.Background(), srv.URL+"/events", testEvent(t))
			if calls.Load() != 1 {
				t.Errorf("sink got %d requests, want exactly 1 (retrying is the job's business)", calls.Load())
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("Send err = %v, want error %v", err, tc.wantErr)
			}
			if got := Retryable(err); got != tc.retryable {
				t.Errorf("Retryable(%v) = %v, want %v", err, got, tc.retryable)
			}
			if err == nil {
				return
			}
			var se *SinkError
			if !errors.As(err, &se) || se.StatusCode != tc.status || se.Body != "reason from the sink" {
				t.Errorf("err = %#v, want a *SinkError with status %d and the sink's reason", err, tc.status)
			}
			if !strings.Contains(err.Error(), "reason from the sink") {
				t.Errorf("error %q does not show the sink's reason", err)
			}
		})
	}
}

func TestNetworkFailuresAreRetryable(t *testing.T) {
	t.Run("nothing listening", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		err := Sender{}.Send(context.Background(), url, testEvent(t))
		if err == nil || !Retryable(err) {
			t.Errorf("Send to a closed port: err = %v, retryable %v; want a retryable error", err, Retryable(err))
		}
	})
	t.Run("connection dropped without an answer", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		err := Sender{Client: srv.Client()}.Send(context.Background(), srv.URL, testEvent(t))
		var se *SinkError
		if err == nil || errors.As(err, &se) || !Retryable(err) {
			t.Errorf("err = %v, want a retryable transport error", err)
		}
	})
	t.Run("context ended before the send", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := Sender{}.Send(ctx, "http://127.0.0.1:9/", testEvent(t))
		if err == nil || !Retryable(err) {
			t.Errorf("err = %v, want retryable: the job is stopped, not the sink broken", err)
		}
	})
}

func TestBadSinkURLIsPermanent(t *testing.T) {
	for _, sinkURL := range []string{"ftp://sink.example.com/", "sink.example.com/events", "http://", "http://[::1", ""} {
		t.Run(sinkURL, func(t *testing.T) {
			if CheckSinkURL(sinkURL) == nil {
				t.Errorf("CheckSinkURL(%q) = nil, want an error", sinkURL)
			}
			err := Sender{}.Send(context.Background(), sinkURL, testEvent(t))
			var perm *PermanentError
			if !errors.As(err, &perm) || Retryable(err) {
				t.Errorf("Send(%q) err = %v, want a *PermanentError that is not retried", sinkURL, err)
			}
		})
	}
	for _, ok := range []string{"http://127.0.0.1:8080/events", "https://broker.example.com/default/ns"} {
		if err := CheckSinkURL(ok); err != nil {
			t.Errorf("CheckSinkURL(%q) = %v, want nil", ok, err)
		}
	}
}

func TestErrorsDoNotLeakTheSinkPassword(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer refusing.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for name, base := range map[string]string{"sink refuses": refusing.URL, "sink down": closed.URL, "bad scheme": "gopher://x"} {
		t.Run(name, func(t *testing.T) {
			withPass := strings.Replace(base, "://", "://ripcord:s3cret-pass@", 1)
			err := Sender{}.Send(context.Background(), withPass, testEvent(t))
			if err == nil || strings.Contains(err.Error(), "s3cret-pass") {
				t.Errorf("err = %v, want an error that does not show the password", err)
			}
		})
	}
	if err := CheckSinkURL("http://u:s3cret-pass@[::1"); err == nil || strings.Contains(err.Error(), "s3cret-pass") {
		t.Errorf("CheckSinkURL err = %v, want an error that does not show the password", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 10, 5, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name, header string
		want         time.Duration
	}{
		{"seconds", "7", 7 * time.Second},
		{"http date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"date in the past means now", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"absent", "", 0},
		{"garbage is ignored", "soon", 0},
		{"negative is ignored", "-5", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryAfter(tc.header, now); got != tc.want {
				t.Errorf("retryAfter(%q) = %s, want %s", tc.header, got, tc.want)
			}
		})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	var se *SinkError
	if err := (Sender{}).Send(context.Background(), srv.URL, testEvent(t)); !errors.As(err, &se) || se.RetryAfter != 7*time.Second {
		t.Errorf("429 with Retry-After: 7 gave %v, want a *SinkError with RetryAfter 7s", err)
	}
}

func TestRetryableSeesThroughWrapping(t *testing.T) {
	refused := fmt.Errorf("deliver effect: %w", &SinkError{StatusCode: 400})
	down := fmt.Errorf("deliver effect: %w", &SinkError{StatusCode: 503})
	if Retryable(refused) || !Retryable(down) || Retryable(nil) {
		t.Errorf("Retryable(wrapped 400, wrapped 503, nil) = %v, %v, %v; want false, true, false",
			Retryable(refused), Retryable(down), Retryable(nil))
	}
	if !Retryable(&net.OpError{Op: "dial", Err: errors.New("connection refused")}) {
		t.Error("a dial error must be retryable")
	}
}
