package store_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The cache must give the same answers as plain statements on both
// engines, and on SQLite keep what it prepared after the transaction that
// first missed.
func TestStatementCacheGivesTheSameAnswers(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.Open(t, dbURL)
		if _, err := db.Write.ExecContext(ctx, `CREATE TABLE kv (k TEXT PRIMARY KEY, v BIGINT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		const upsert = `INSERT INTO kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = kv.v + excluded.v`
		const get = `SELECT v FROM kv WHERE k = $1`
		for i := 1; i <= 3; i++ {
			var got int64
			err := db.InDurableTx(ctx, func(tx *sql.Tx) error {
				if _, err := db.Exec(ctx, tx, upsert, "a", 10); err != nil {
					return err
				}
				rows, err := db.Query(ctx, tx, get, "a")
				if err != nil {
					return err
				}
				rows.Close()
				return db.QueryRow(ctx, tx, get, "a").Scan(&got)
			})
			if err != nil {
				t.Fatalf("transaction %d: %v", i, err)
			}
			if want := int64(10 * i); got != want {
				t.Fatalf("transaction %d read v = %d, want %d", i, got, want)
			}
			want := 0
			if db.Dialect == store.SQLite {
				want = 2 // the upsert and the select, prepared after the first transaction
			}
			if n := db.CachedStatements(); n != want {
				t.Fatalf("after transaction %d the cache holds %d statements, want %d", i, n, want)
			}
		}
		// A rolled-back transaction through cached statements leaves nothing.
		_ = db.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := db.Exec(ctx, tx, upsert, "a", 1000); err != nil {
				t.Fatal(err)
			}
			return sql.ErrNoRows
		})
		var v int64
		if err := db.Read.QueryRowContext(ctx, get, "a").Scan(&v); err != nil || v != 30 {
			t.Fatalf("after a rollback v = %d (%v), want 30", v, err)
		}
	})
}
