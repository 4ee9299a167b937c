package setup

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A set-up token opens /setup on every replica sharing the database: the
// database keeps only its hash (a dump of it opens nothing), takes the
// exact token and nothing near it, and forgets every token once an App is
// stored, when no replica offers a registration any more.
func TestSetUpTokensAreKeptHashedAndDroppedWithTheApp(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		s, db := openStore(t, dbURL, bytes.Repeat([]byte{9}, 32))
		logged, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		own, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if logged == own {
			t.Fatalf("two set-up tokens are the same: %q", own)
		}
		if err := s.AddToken(ctx, logged, time.Now()); err != nil {
			t.Fatal(err)
		}
		var stored string
		if err := db.Read.QueryRow(`SELECT token_hash FROM app_setup_tokens`).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if stored == logged || len(stored) != 64 {
			t.Errorf("the database keeps %q for token %q, want its SHA-256 only", stored, logged)
		}
		cases := []struct {
			name, token, own string
			want             bool
		}{
			{"another replica's token", logged, "", true},
			{"this process's own token", own, own, true},
			{"another replica's token, this process having its own", logged, own, true},
			{"no token", "", own, false},
			{"a wrong token", "nope", own, false},
			{"the stored hash itself", stored, own, false},
			{"a token cut short", logged[:len(logged)-1], own, false},
		}
		for _, c := range cases {
			got, err := s.TokenAccepted(ctx, c.token, c.own)
			if err != nil || got != c.want {
				t.Errorf("%s: accepted %v (%v), want %v", c.name, got, err, c.want)
			}
		}
		if err := s.Save(ctx, testCreds); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.TokenAccepted(ctx, logged, ""); ok || err != nil {
			t.Errorf("once an App is stored the logged token is still accepted (%v)", err)
		}
	})
}
