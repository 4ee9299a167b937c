package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
)

// MigratedURL is URL with ripcord's and the job queue's migrations already
// applied, for tests that need the schema but do not test migrating: a copy
// of a database migrated once per test binary and engine. Under -race,
// migrating a fresh SQLite database (pure Go) costs about a second of CPU,
// which a package that opens hundreds of databases paid for every test. A
// server or store.Migrate run on the copy finds nothing to apply.
func MigratedURL(t testing.TB, engine string) string {
	t.Helper()
	if engine == "sqlite" {
		b, err := sqliteTemplate()
		if err != nil {
			t.Fatalf("migrated SQLite template: %v", err)
		}
		path := filepath.Join(t.TempDir(), "ripcord.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return "sqlite://" + path
	}
	admin := adminURL(t)
	tmpl, err := postgresTemplate(admin)
	if err != nil {
		t.Fatalf("migrated PostgreSQL template: %v", err)
	}
	return newPostgresDBFrom(t, admin, tmpl)
}

// EachMigrated is Each with MigratedURL's databases.
func EachMigrated(t *testing.T, fn func(t *testing.T, dbURL string)) {
	t.Helper()
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			fn(t, MigratedURL(t, engine))
		})
	}
}

// sqliteTemplate is the file of a migrated SQLite database, kept in memory
// (a few MiB) so no file outlives the test binary.
var sqliteTemplate = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "ripcord-testdb-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ripcord.db")
	if err := migrate("sqlite://" + path); err != nil {
		return nil, err
	}
	// A clean close folds the WAL into the file and removes it: the
	// file alone is the whole database.
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() > 0 {
		return nil, fmt.Errorf("%s-wal left after close: the copy would miss its pages", path)
	}
	return os.ReadFile(path)
})

var (
	pgTemplateMu sync.Mutex
	pgTemplates  = map[string]string{} // admin URL → template database
)

// postgresTemplate is a migrated database on the server of admin, made on
// the first call. CREATE DATABASE ... TEMPLATE copies it. It stays on the
// server, one per test binary: the servers tests run on are throwaway
// (scripts/with-postgres.sh, .ci/run).
func postgresTemplate(admin string) (string, error) {
	pgTemplateMu.Lock()
	defer pgTemplateMu.Unlock()
	if name, ok := pgTemplates[admin]; ok {
		return name, nil
	}
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return "", err
	}
	defer db.Close()
	name := fmt.Sprintf("ripcord_template_%d", rand.Int64())
	if _, err := db.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	u, err := withDatabase(admin, name)
	if err != nil {
		return "", err
	}
	if err := migrate(u); err != nil {
		return "", err
	}
	pgTemplates[admin] = name
	return name, nil
}

// migrate applies the migrations to the database at dbURL and closes it.
func migrate(dbURL string) error {
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}
