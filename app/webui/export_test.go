package webui

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// SessionCookie is the session cookie a completed sign-in as login with
// token leaves, sealed with clientSecret. The end-to-end tests (package
// webui_test, which can start the whole server) use it: the server sends
// the sign-in to GitHub's web host derived from github.api_url, which the
// fake GitHub serves on another address.
func SessionCookie(clientSecret, login, token string, expires time.Time) (*http.Cookie, error) {
	s, err := newSealer(clientSecret)
	if err != nil {
		return nil, err
	}
	v, err := s.seal(sessionCookie, session{Login: login, Token: token, Expires: expires})
	if err != nil {
		return nil, err
	}
	return &http.Cookie{Name: sessionCookie, Value: v}, nil
}

// The browser helpers of browser_test.go, for the end-to-end browser test.
var (
	NewBrowser = newBrowser
	Person     = person
	Step       = step
)

// EvalString evaluates js in the page to a string.
func EvalString(t *testing.T, ctx context.Context, js string) string { return eval[string](t, ctx, js) }
