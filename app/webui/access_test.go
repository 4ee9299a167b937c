package webui

import (
	"context"
	"testing"
	"time"
)

func TestAccessIsAskedAgainAfterTTL(t *testing.T) {
	t.Parallel()
	gh := newFakeGitHub()
	a := newAccess()
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		token string
		at    time.Time
		calls int
	}{
		{"first page asks GitHub", "tok-alice", t0, 1},
		{"browsing within the TTL does not", "tok-alice", t0.Add(accessTTL - time.Second), 1},
		{"another person asks for themselves", "tok-mallory", t0, 2},
		{"after the TTL, a lost permission shows", "tok-alice", t0.Add(accessTTL), 3},
		{"a clock that went back asks again", "tok-alice", t0.Add(-time.Minute), 4},
	} {
		repos, err := a.readable(ctx, gh, c.token, c.at)
		if err != nil {
			t.Fatal(err)
		}
		if gh.calls != c.calls {
			t.Errorf("%s: %d calls to GitHub, want %d", c.name, gh.calls, c.calls)
		}
		if c.token == "tok-alice" && !canRead(repos, "acme/shop") {
			t.Errorf("%s: alice cannot read acme/shop (GitHub spells it ACME/Shop)", c.name)
		}
	}
	if canRead(map[string]bool{"": true}, "") {
		t.Error("a record without a repository was readable")
	}
}
