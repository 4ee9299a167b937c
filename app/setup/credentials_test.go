package setup

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

func openStore(t *testing.T, dbURL string, key []byte) (*Store, *store.DB) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := NewKeyring(key, "")
	if err != nil {
		t.Fatal(err)
	}
	return NewStore(db, keys), db
}

var testCreds = Credentials{AppID: 42, Slug: "ripcord-acme", HTMLURL: "https://github.com/apps/ripcord-acme",
	ClientID: "Iv1.abc", ClientSecret: "client-secret-plain", WebhookSecret: "webhook-secret-plain",
	PrivateKey: []byte("-----BEGIN RSA PRIVATE KEY-----\nplain\n-----END RSA PRIVATE KEY-----\n"),
	APIURL:     "https://api.github.com/", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

func TestStoredCredentialsAreSealedAndComeBack(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		s, db := openStore(t, dbURL, bytes.Repeat([]byte{9}, 32))
		if _, ok, err := s.Load(ctx); ok || err != nil {
			t.Fatalf("Load on an empty store = ok %v, %v", ok, err)
		}
		if err := s.Save(ctx, testCreds); err != nil {
			t.Fatal(err)
		}
		var secret, hook, key []byte
		if err := db.Read.QueryRow(`SELECT client_secret, webhook_secret, private_key FROM app_credentials`).Scan(&secret, &hook, &key); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string][]byte{"client_secret": secret, "webhook_secret": hook, "private_key": key} {
			if bytes.Contains(v, []byte("plain")) || bytes.Contains(v, []byte("PRIVATE KEY")) {
				t.Errorf("%s is stored in plaintext: %q", name, v)
			}
		}
		got, ok, err := s.Load(ctx)
		if err != nil || !ok {
			t.Fatalf("Load = ok %v, %v", ok, err)
		}
		if got.AppID != 42 || got.Slug != testCreds.Slug || got.HTMLURL != testCreds.HTMLURL || got.ClientID != testCreds.ClientID ||
			got.ClientSecret != testCreds.ClientSecret || got.WebhookSecret != testCreds.WebhookSecret ||
			!bytes.Equal(got.PrivateKey, testCreds.PrivateKey) || !got.CreatedAt.Equal(testCreds.CreatedAt) {
			t.Errorf("Load = %+v, want %+v", got, testCreds)
		}
		other := openStoreOn(t, db, bytes.Repeat([]byte{8}, 32))
		if _, _, err := other.Load(ctx); err == nil {
			t.Error("credentials sealed with one secrets_key opened with another")
		}
	})
}

func openStoreOn(t *testing.T, db *store.DB, key []byte) *Store {
	keys, err := NewKeyring(key, "")
	if err != nil {
		t.Fatal(err)
	}
	return NewStore(db, keys)
}

func TestAStateWorksOnceAndForAnHour(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		s, _ := openStore(t, dbURL, bytes.Repeat([]byte{9}, 32))
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		fresh, err := s.IssueState(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		old, err := s.IssueState(ctx, now.Add(-2*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name  string
			state string
			want  bool
		}{
			{"the page's state", fresh, true},
			{"the same state again (a reloaded callback)", fresh, false},
			{"a state never issued", "0123456789abcdef", false},
			{"a state older than an hour", old, false},
		}
		for _, c := range cases {
			ok, err := s.ConsumeState(ctx, c.state, now.Add(time.Minute))
			if err != nil || ok != c.want {
				t.Errorf("%s: ConsumeState = %v, %v; want %v", c.name, ok, err, c.want)
			}
		}
	})
}

// Of callbacks racing with one state (on one replica or several) only one
// takes it; a state given back after a failed exchange can be taken once
// more, still only within an hour of its page.
func TestAStateGivenBackIsTakenOnceAndKeepsItsAge(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		s, _ := openStore(t, dbURL, bytes.Repeat([]byte{9}, 32))
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		state, err := s.IssueState(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var taken atomic.Int32
		var issued time.Time
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				at, ok, err := s.TakeState(ctx, state, now.Add(time.Minute))
				if err != nil {
					t.Errorf("TakeState: %v", err)
				}
				if ok && taken.Add(1) == 1 {
					issued = at
				}
			}()
		}
		wg.Wait()
		if n := taken.Load(); n != 1 {
			t.Fatalf("%d of 8 concurrent callbacks took the state, want 1", n)
		}
		if !issued.Equal(now) {
			t.Errorf("TakeState says the state was issued at %v, want %v", issued, now)
		}
		if err := s.ReturnState(ctx, state, issued); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.TakeState(ctx, state, now.Add(59*time.Minute)); err != nil || !ok {
			t.Errorf("a state given back: TakeState = %v, %v; want it taken", ok, err)
		}
		if err := s.ReturnState(ctx, state, issued); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.TakeState(ctx, state, now.Add(61*time.Minute)); err != nil || ok {
			t.Errorf("a state given back, an hour after its page: TakeState = %v, %v; want refused", ok, err)
		}
	})
}

// A second App is not stored over the first (two replicas finishing a
// registration at once); the same App is replaced.
func TestSaveRefusesASecondApp(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		s, _ := openStore(t, dbURL, bytes.Repeat([]byte{9}, 32))
		if err := s.Save(ctx, testCreds); err != nil {
			t.Fatal(err)
		}
		other := testCreds
		other.AppID, other.CreatedAt = 43, testCreds.CreatedAt.Add(time.Hour)
		if err := s.Save(ctx, other); !errors.Is(err, ErrRegistered) {
			t.Errorf("Save of a second App = %v, want ErrRegistered", err)
		}
		if err := s.Save(ctx, testCreds); err != nil {
			t.Errorf("Save of the same App again = %v, want it replaced", err)
		}
		if got, ok, err := s.Registered(ctx); err != nil || !ok || got.AppID != 42 {
			t.Errorf("Registered = %d %v %v, want App 42", got.AppID, ok, err)
		}
	})
}
