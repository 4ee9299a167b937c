package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/ghlimit"
)

// apiClient talks to a ripcord server's /api/v1 for the CLI commands.
type apiClient struct {
	server, token string
	// tokenHint says, after a 401, where the token came from and what it
	// must be: the server cannot tell a stale variable from a typo.
	tokenHint string
	// serverFrom says where the server's URL came from, for when no
	// server answers there: most often none runs at the default address.
	serverFrom string
	http       *http.Client
	retries    int
	backoff    time.Duration
}

// clientFlags adds --server and --token (env RIPCORD_SERVER, tokenEnv).
// The function it returns builds the client once the flags are parsed,
// first warning on stderr about each RIPCORD_* variable that ripcord does
// not read: a misspelt RIPCORD_API_TOKN would otherwise leave the command
// with no token, or an old one, and the server's bare 401.
func clientFlags(fs *flag.FlagSet, tokenEnv, tokenHelp string) func() (*apiClient, error) {
	server := fs.String("server", "", "ripcord server URL (env RIPCORD_SERVER, default http://127.0.0.1:8080)")
	token := fs.String("token", "", tokenHelp+" (env "+tokenEnv+")")
	return func() (*apiClient, error) {
		for _, u := range config.CheckEnv(os.Environ()) {
			fmt.Fprintf(os.Stderr, "%s: warning: %s\n", fs.Name(), u)
		}
		from := "was read from environment variable " + tokenEnv + " (--token overrides it)"
		if *token != "" {
			from = "was given by flag --token (it overrides " + tokenEnv + ")"
		}
		serverFrom := "is the default (--server or RIPCORD_SERVER sets another)"
		switch {
		case *server != "":
			serverFrom = "was given by flag --server"
		case os.Getenv("RIPCORD_SERVER") != "":
			serverFrom = "was read from environment variable RIPCORD_SERVER"
		}
		c := &apiClient{server: firstOf(*server, os.Getenv("RIPCORD_SERVER"), "http://127.0.0.1:8080"), serverFrom: serverFrom,
			token:     firstOf(*token, os.Getenv(tokenEnv)),
			tokenHint: fmt.Sprintf("the token %s and must be %s", from, tokenHelp),
			http:      &http.Client{Timeout: 30 * time.Second}, retries: 4, backoff: time.Second}
		c.server = strings.TrimSuffix(c.server, "/")
		if !strings.HasPrefix(c.server, "http://") && !strings.HasPrefix(c.server, "https://") {
			return nil, fmt.Errorf("--server %q is not an http(s) URL", c.server)
		}
		if c.token == "" {
			return nil, fmt.Errorf("no token: pass --token or set %s", tokenEnv)
		}
		return c, nil
	}
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// problemLine is one problem of a refused body as the server words it:
// the field's path, then what is wrong with it.
var problemLine = regexp.MustCompile(`^[A-Za-z0-9_.\[\]]+: `)

// apiError is a non-2xx answer, with the server's message.
type apiError struct {
	Status  int
	Message string
	Field   string
	// Code is the answer's code, when it has one: the kind of refusal,
	// pipeline.CodeAppNotConfigured for a server with no GitHub App.
	Code string
	// Hint is the CLI's own word on what to fix, when it knows more than
	// the server: where a refused token came from, or when the server
	// asks to be asked again.
	Hint string
	// rename, when set, gives the name the user wrote for a field the
	// server names: the flag of a fact typed from flags.
	rename func(field string) string
	// retryAfter is the answer's Retry-After, when it has one.
	retryAfter    time.Duration
	hasRetryAfter bool
}

func (e *apiError) Error() string {
	message := e.Message
	// The server says every problem of a refused body at once, "; " apart,
	// each naming its field ("uid: is required; release_id: is required"):
	// a line each reads better.
	parts := strings.Split(message, "; ")
	problems := !slices.ContainsFunc(parts, func(p string) bool { return !problemLine.MatchString(p) })
	if problems && e.rename != nil {
		for i, p := range parts {
			field, rest, _ := strings.Cut(p, ": ")
			parts[i] = e.rename(field) + ": " + rest
		}
		message = strings.Join(parts, "; ")
	}
	if problems && len(parts) > 1 {
		message = strings.Join(parts, "\n")
	}
	msg := fmt.Sprintf("server answered %d: %s", e.Status, message)
	// A message of several lines (a fact with several bad fields) names
	// each line's field itself; the answer's field, the first of them,
	// put after the last line named another line's field.
	switch {
	case e.Field == "" || strings.Contains(message, "\n"):
	case e.rename != nil && e.rename(e.Field) != e.Field:
		msg += fmt.Sprintf(" (flag %s)", e.rename(e.Field))
	default:
		msg += fmt.Sprintf(" (field %s)", e.Field)
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// do sends a request and decodes the JSON answer into out. Connection errors
// and 5xx are retried with backoff; 4xx are not (they will not change), nor
// is the 503 of a server with no GitHub App (code app_not_configured):
// only its operator can change that answer, and the user waited 15 s to
// be told so.
// A 5xx with a Retry-After is asked again once that time has passed, in
// place of the backoff's next step, if it passes within what is left of
// the backoff; if not, retrying within the backoff is pointless (GitHub's
// rate limit, behind a 503, may be an hour away) and do stops at once,
// saying when to try again.
func (c *apiClient) do(ctx context.Context, method, path string, body []byte, out any) error {
	left := c.backoff * (1<<c.retries - 1)
	var last error
	for attempt := 0; ; attempt++ {
		last = c.once(ctx, method, path, body, out)
		var ae *apiError
		isAnswer := errors.As(last, &ae)
		if last == nil || (isAnswer && (ae.Status < 500 || ae.Code == pipeline.CodeAppNotConfigured)) {
			return last
		}
		if isAnswer && ae.hasRetryAfter && (attempt == c.retries || ae.retryAfter > left) {
			ae.Hint = retryHint(time.Now(), ae.retryAfter)
			return ae
		}
		if attempt == c.retries {
			break
		}
		wait, why := min(c.backoff<<attempt, left), ""
		if isAnswer && ae.hasRetryAfter {
			wait, why = ae.retryAfter, ", as the server's Retry-After asks"
		}
		left -= wait
		fmt.Fprintf(os.Stderr, "retrying in %s (attempt %d of %d%s): %v\n", wait, attempt+2, c.retries+1, why, last)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var ue *unreachableError
	if errors.As(last, &ue) {
		return fmt.Errorf("%w, whose URL %s", last, c.serverFrom)
	}
	return last
}

// unreachableError is a request no server answered: it says where and why in
// a few words, not as Go's error chain (`Get "…": dial tcp …: connect: …`),
// which told a newcomer less than it printed.
type unreachableError struct {
	server  string
	timeout time.Duration
	err     error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("no server answered at %s (%s)", e.server, e.reason())
}

func (e *unreachableError) Unwrap() error { return e.err }

func (e *unreachableError) reason() string {
	var dns *net.DNSError
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.Is(e.err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens there"
	case errors.As(e.err, &dns) && dns.IsNotFound:
		return "no host " + dns.Name + " is known"
	case errors.As(e.err, &dns):
		return "cannot look up " + dns.Name + ": " + dns.Err
	case errors.As(e.err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %s", e.timeout)
	case errors.As(e.err, &ue):
		return ue.Err.Error()
	}
	return e.err.Error()
}

// notRipcord says what to check when an answer is not one ripcord's API
// gives (its answers are JSON): --server most likely names another server,
// or a proxy answered in its stead.
func (c *apiClient) notRipcord() string {
	from := ""
	if c.serverFrom != "" {
		from = ", whose URL " + c.serverFrom + ","
	}
	return fmt.Sprintf("that is not ripcord's answer (ripcord answers JSON): check that %s%s is a ripcord server's address", c.server, from)
}

// noAppHint says what to do about a server with no GitHub App: its
// operator registers one at /setup, with the set-up token only the
// server's log holds, or configures one; asking again changes nothing
// until then.
func (c *apiClient) noAppHint() string {
	return fmt.Sprintf("the server has no GitHub App, and asking again changes nothing until it has one: "+
		"register it at %s/setup?token=… with the set-up token from the server's start-up log "+
		"(its line \"the GitHub App is not configured\" gives the link), "+
		"or set github.app_id and github.private_key in the server's configuration and restart it", c.server)
}

// shortBody is an answer's body that is not ripcord's JSON, on one line and
// cut: a proxy's or another server's HTML page would fill the terminal.
func shortBody(data []byte) string {
	s := strings.Join(strings.Fields(string(data)), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	if s == "" {
		return "(no body)"
	}
	return s
}

// retryHint says when a Retry-After of wait from now ends, on the user's
// clock (now's zone: the local one): "try again after 14:05 UTC (in 42
// min)". The time is rounded up, so that trying at the time said is never
// too early; a wait under two minutes is said to the second.
func retryHint(now time.Time, wait time.Duration) string {
	at := now.Add(wait)
	if wait < 2*time.Minute {
		secs := (wait + time.Second - 1) / time.Second
		if t := at.Truncate(time.Second); t.Before(at) {
			at = t.Add(time.Second)
		}
		return fmt.Sprintf("try again after %s (in %d s)", at.Format("15:04:05 MST"), secs)
	}
	if t := at.Truncate(time.Minute); t.Before(at) {
		at = t.Add(time.Minute)
	}
	layout := "15:04 MST"
	if y, m, d := now.Date(); at.Day() != d || at.Month() != m || at.Year() != y {
		layout = "Jan 2 15:04 MST"
	}
	mins := int((wait + time.Minute - 1) / time.Minute)
	in := fmt.Sprintf("%d min", mins)
	if mins >= 60 {
		in = fmt.Sprintf("%d h", mins/60)
		if mins%60 != 0 {
			in += fmt.Sprintf(" %d min", mins%60)
		}
	}
	return fmt.Sprintf("try again after %s (in %s)", at.Format(layout), in)
}

func (c *apiClient) once(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &unreachableError{server: c.server, timeout: c.http.Timeout, err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error, Field, Code string }
		ripcords := json.Unmarshal(data, &e) == nil && e.Error != ""
		if !ripcords {
			e.Error, e.Code = shortBody(data), ""
		}
		ae := &apiError{Status: resp.StatusCode, Message: e.Error, Field: e.Field, Code: e.Code}
		ae.retryAfter, ae.hasRetryAfter = ghlimit.RetryAfter(resp.Header, time.Now())
		switch {
		case !ripcords:
			ae.Hint = c.notRipcord()
		case resp.StatusCode == http.StatusUnauthorized:
			ae.Hint = c.tokenHint
		case e.Code == pipeline.CodeAppNotConfigured:
			ae.Hint = c.noAppHint()
		}
		return ae
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("the answer (%d, %s) is not the JSON expected: %v; %s", resp.StatusCode, shortBody(data), err, c.notRipcord())
		}
	}
	return nil
}
