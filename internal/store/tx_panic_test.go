package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A transaction whose function panics is rolled back before the panic goes
// on: on SQLite it would otherwise hold the one writer connection, and the
// next transaction would wait for it forever.
func TestPanicInATransactionLeavesTheWriterFree(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := testdb.Open(t, dbURL)
		if _, err := db.Write.ExecContext(ctx, `CREATE TABLE t (v INTEGER)`); err != nil {
			t.Fatal(err)
		}
		for name, inTx := range map[string]func(context.Context, func(*sql.Tx) error) error{
			"InTx": db.InTx, "InDurableTx": db.InDurableTx,
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s swallowed the panic", name)
					}
				}()
				_ = inTx(ctx, func(tx *sql.Tx) error {
					if _, err := tx.ExecContext(ctx, `INSERT INTO t (v) VALUES (1)`); err != nil {
						return err
					}
					panic("bug")
				})
			}()
			next, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := inTx(next, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(next, `INSERT INTO t (v) VALUES (2)`)
				return err
			})
			cancel()
			if err != nil {
				t.Fatalf("%s after a panic: %v", name, err)
			}
		}
		var ones int
		if err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM t WHERE v = 1`).Scan(&ones); err != nil {
			t.Fatal(err)
		}
		if ones != 0 {
			t.Errorf("%d rows of the panicked transactions were kept", ones)
		}
	})
}
