package records

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// openStore opens and migrates the database at dbURL.
func openStore(t testing.TB, dbURL string) (*Store, *store.DB) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return NewStore(db), db
}

// applyFact applies f in its own transaction.
func applyFact(t testing.TB, s *Store, f Fact, delivery string, now time.Time) Result {
	t.Helper()
	var res Result
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		res, err = s.ApplyFact(context.Background(), tx, f, delivery, now)
		return err
	})
	if err != nil {
		t.Fatalf("apply %s: %v", describeFact(f), err)
	}
	return res
}

// openRelease registers r, created at its CreatedAt.
func openRelease(t testing.TB, s *Store, r Record) Record {
	t.Helper()
	var rec Record
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		rec, _, err = s.OpenRelease(context.Background(), tx, r, r.CreatedAt)
		return err
	})
	if err != nil {
		t.Fatalf("open %s: %v", r.ReleaseID, err)
	}
	return rec
}

// putRecord inserts a record as it is, whatever its state, for tests that
// need a history without replaying it.
func putRecord(t testing.TB, s *Store, r Record) {
	t.Helper()
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error { return s.insertRecord(context.Background(), tx, r) })
	if err != nil {
		t.Fatal(err)
	}
}

func mustGet(t testing.TB, s *Store, rel string) Record {
	t.Helper()
	r, err := s.Get(context.Background(), rel)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// storedStates reads the state of each release.
func storedStates(t testing.TB, s *Store, rels ...string) map[string]State {
	t.Helper()
	out := map[string]State{}
	for _, rel := range rels {
		out[rel] = mustGet(t, s, rel).State
	}
	return out
}

// count runs a COUNT(*) query on the read pool.
func count(t testing.TB, s *Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.db.Read.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// sameRecord fails when the stored record differs from the one a Result
// or OpenRelease returned.
func sameRecord(t testing.TB, got, want Record) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stored record differs from the one returned:\n  got  %+v\n  want %+v", got, want)
	}
}
