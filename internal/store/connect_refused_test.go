package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testnet"
)

// A start against a PostgreSQL that refuses connections is the first
// error many newcomers see: it must be one line that names the setting,
// the address tried and pgx's reason, without the password, however many
// attempts pgx made (sslmode=prefer tries twice, so pgx wrote three lines).
func TestOpenRefusedIsOneLineNamingTheSettingAndAddress(t *testing.T) {
	t.Parallel()
	addr := testnet.RefusedAddr(t) // connecting to it is refused at once
	for _, c := range []struct{ name, url string }{
		{"default sslmode (prefer: two attempts)", "postgres://ripcord:hunter2@" + addr + "/ripcord"},
		{"sslmode=disable (one attempt)", "postgres://ripcord:hunter2@" + addr + "/ripcord?sslmode=disable"},
	} {
		_, err := store.Open(context.Background(), c.url)
		if err == nil {
			t.Fatalf("%s: opened a database on a closed port", c.name)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%s: the error is several lines:\n%s", c.name, msg)
		}
		for _, want := range []string{"database", "--database", "RIPCORD_DATABASE", "PostgreSQL at " + addr, "connection refused"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the error does not say %q: %s", c.name, want, msg)
			}
		}
		if strings.Contains(msg, "hunter2") {
			t.Errorf("%s: the error shows the password: %s", c.name, msg)
		}
		if n := strings.Count(msg, "connection refused"); n != 1 {
			t.Errorf("%s: the error says pgx's reason %d times, want once: %s", c.name, n, msg)
		}
		var ce *pgconn.ConnectError
		if !errors.As(err, &ce) {
			t.Errorf("%s: pgx's error is not underneath (%T)", c.name, err)
		}
	}
}
