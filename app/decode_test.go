package app

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// failingBody gives some bytes, then an error, as a connection that drops
// mid-body does.
type failingBody struct{ sent bool }

func (b *failingBody) Read(p []byte) (int, error) {
	if b.sent {
		return 0, errors.New("connection reset by peer")
	}
	b.sent = true
	return copy(p, `{"release_id": "r1"`), nil
}

// A body larger than the bound is 413; a body that cannot be read to its
// end is the request's fault (400), not its size.
func TestReadBodyTellsTooLargeFromUnreadable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body io.Reader
		code int
		want string
	}{
		{"too large", strings.NewReader(strings.Repeat("x", maxBodyBytes+1)), http.StatusRequestEntityTooLarge, "larger than 1 MiB"},
		{"cut short", &failingBody{}, http.StatusBadRequest, "could not read the request body: connection reset by peer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			if _, ok := readBody(w, httptest.NewRequest("POST", "/api/v1/releases", tc.body)); ok {
				t.Fatal("readBody took the body")
			}
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("answered %d %s, want %d saying %q", w.Code, w.Body.String(), tc.code, tc.want)
			}
		})
	}
	w := httptest.NewRecorder()
	if body, ok := readBody(w, httptest.NewRequest("POST", "/api/v1/releases", strings.NewReader(`{}`))); !ok || string(body) != `{}` {
		t.Errorf("a small body: %q, %v (answered %d)", body, ok, w.Code)
	}
}
