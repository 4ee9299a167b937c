package cdevents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
)

// ContentType is the CloudEvents structured-mode media type: the whole
// CloudEvent, attributes and data, is the JSON body.
const ContentType = "application/cloudevents+json; charset=utf-8"

// defaultTimeout bounds one delivery when the Sender has no client of its
// own; the job queue retries a delivery that timed out.
const defaultTimeout = 30 * time.Second

// Sender posts CloudEvents to HTTP sinks. The zero value is ready to use.
type Sender struct {
	// Client sends the requests; nil means a client with a 30s timeout.
	Client *http.Client
}

// Send posts ev to sinkURL in structured mode. A 2xx answer is success.
// Any other outcome is an error for Retryable to classify: a *SinkError
// when the sink answered, a *PermanentError when the sink URL or the event
// can never be sent, and the transport's error otherwise.
func (s Sender) Send(ctx context.Context, sinkURL string, ev cloudevents.Event) error {
	if err := CheckSinkURL(sinkURL); err != nil {
		return &PermanentError{Err: err}
	}
	sink := redact(sinkURL)
	body, err := json.Marshal(ev)
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("encode cloudevent %s: %w", ev.ID(), err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sinkURL, bytes.NewReader(body))
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("cdevent sink %s: %w", sink, err)}
	}
	req.Header.Set("Content-Type", ContentType)
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: defaultTimeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		// The url.Error names the URL with its password; say the sink
		// without it.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("post cloudevent %s to %s: %w", ev.ID(), sink, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	// Drain a little more so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	return &SinkError{
		Sink:       sink,
		EventID:    ev.ID(),
		StatusCode: resp.StatusCode,
		Body:       strings.TrimSpace(string(snippet)),
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
}

// SinkError is a sink's answer other than 2xx.
type SinkError struct {
	Sink       string // the sink URL, without credentials
	EventID    string
	StatusCode int
	// Body is the start of the answer, which usually says what was wrong.
	Body string
	// RetryAfter is the sink's Retry-After, zero when it sent none.
	RetryAfter time.Duration
}

func (e *SinkError) Error() string {
	msg := fmt.Sprintf("cdevent sink %s answered %d to event %s", e.Sink, e.StatusCode, e.EventID)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// PermanentError is a delivery that can never succeed as configured: a
// sink URL that is not http(s), or an event that cannot be encoded.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Retryable reports whether a delivery that failed with err may succeed
// later: network errors, timeouts, 5xx, 429 (rate limited) and 408 (the
// sink timed out) are; any other answer (400, 401, 404…) and a bad sink URL
// are not, because retrying sends the same event to the same sink and gets
// the same refusal — that is reported, not retried forever.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var perm *PermanentError
	if errors.As(err, &perm) {
		return false
	}
	var sink *SinkError
	if errors.As(err, &sink) {
		code := sink.StatusCode
		return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout
	}
	return true
}

// CheckSinkURL reports why a configured sink URL cannot receive CloudEvents
// over HTTP, or nil. Configuration loading calls it so a typo is an error at
// start, not a failed delivery later.
func CheckSinkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL, password and all.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("cdevent sink is not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("cdevent sink %q: scheme must be http or https, got %q", redact(raw), u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("cdevent sink %q: has no host", redact(raw))
	}
	return nil
}

// redact hides a password in a sink URL (basic auth to a sink is common)
// so errors and logs can name the sink.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
