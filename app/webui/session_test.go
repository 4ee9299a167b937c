package webui

import (
	"strings"
	"testing"
	"time"
)

func TestSealedCookies(t *testing.T) {
	t.Parallel()
	s, err := newSealer("client-secret")
	if err != nil {
		t.Fatal(err)
	}
	good := session{Login: "alice", Token: "ghu_x", Expires: t0.Add(time.Hour)}
	sealed, err := s.seal(sessionCookie, good)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "ghu_x") {
		t.Fatal("the user token is readable in the cookie")
	}
	if got, ok := s.openSession(sealed, t0); !ok || got.Login != "alice" || got.Token != "ghu_x" {
		t.Fatalf("open = %+v, %v", got, ok)
	}
	rotated, _ := newSealer("rotated-secret")
	asState, _ := s.seal(stateCookie, good)
	flipped := []byte(sealed)
	flipped[len(flipped)/2] ^= 1
	for _, c := range []struct {
		name   string
		sealer sealer
		value  string
		at     time.Time
	}{
		{"a changed byte", s, string(flipped), t0},
		{"sealed under a rotated client secret", rotated, sealed, t0},
		{"a state cookie replayed as a session", s, asState, t0},
		{"expired", s, sealed, t0.Add(time.Hour)},
		{"not base64", s, "%%%", t0},
		{"too short", s, "AAAA", t0},
	} {
		if got, ok := c.sealer.openSession(c.value, c.at); ok {
			t.Errorf("%s: opened %+v", c.name, got)
		}
	}
	if _, err := newSealer(""); err == nil {
		t.Error("an empty client secret made a key")
	}
}

func TestLocalPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in, want string }{
		{"a page here", "/releases/a-1", "/releases/a-1"},
		{"empty goes home", "", "/"},
		{"another host", "https://evil.example/", "/"},
		{"a scheme-relative host", "//evil.example/x", "/"},
		{"a backslash host", `/\evil.example`, "/"},
		{"a backslash host behind a dot segment, which http.Redirect cleans away", `/./\evil.example`, "/"},
		{"a relative path", "releases", "/"},
	} {
		if got := localPath(c.in); got != c.want {
			t.Errorf("%s: localPath(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}
