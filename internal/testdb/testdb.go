// Package testdb gives tests a fresh database on each engine ripcord supports:
// a SQLite file in the test's temp dir, and a new database on the PostgreSQL
// server named by RIPCORD_TEST_POSTGRES (an admin URL, as .ci/run sets it).
package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
)

// PostgresEnv names the admin URL of the PostgreSQL server used by tests.
const PostgresEnv = "RIPCORD_TEST_POSTGRES"

// Engines are the database engines, in the order tests run them.
var Engines = []string{"sqlite", "postgres"}

// Each runs fn as a subtest once per engine with a fresh, empty database URL.
func Each(t *testing.T, fn func(t *testing.T, dbURL string)) {
	t.Helper()
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			fn(t, URL(t, engine))
		})
	}
}

// Open opens dbURL through the store; it is closed when the test ends.
func Open(t testing.TB, dbURL string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenMigrated is Open with ripcord's and the job queue's migrations
// applied.
func OpenMigrated(t testing.TB, dbURL string) *store.DB {
	t.Helper()
	db := Open(t, dbURL)
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// URL returns a fresh database URL for engine. Without RIPCORD_TEST_POSTGRES a
// postgres test is skipped locally and fails in CI (CI=true), so CI can never
// pass without having run on PostgreSQL.
func URL(t testing.TB, engine string) string {
	t.Helper()
	if engine == "sqlite" {
		return "sqlite://" + filepath.Join(t.TempDir(), "ripcord.db")
	}
	return newPostgresDB(t, adminURL(t))
}

// adminURL is RIPCORD_TEST_POSTGRES; without it the test is skipped
// locally and fails in CI.
func adminURL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI must run the suite on PostgreSQL (.ci/run starts one)", PostgresEnv)
		}
		t.Skipf("needs PostgreSQL: set %s=postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable (.ci/run does)", PostgresEnv)
	}
	return admin
}

func newPostgresDB(t testing.TB, admin string) string { return newPostgresDBFrom(t, admin, "") }

// newPostgresDBFrom creates a database that is a copy of template (the
// server's default, template1, when "") and drops it when the test ends.
func newPostgresDBFrom(t testing.TB, admin, template string) string {
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("open %s: %v", PostgresEnv, err)
	}
	defer db.Close()
	name := fmt.Sprintf("ripcord_test_%d", rand.Int64())
	ctx := context.Background()
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + template
	}
	if _, err := db.ExecContext(ctx, create); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := withDatabase(admin, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// withDatabase is the URL admin with its database changed to name.
func withDatabase(admin, name string) (string, error) {
	u, err := url.Parse(admin)
	if err != nil {
		return "", fmt.Errorf("parse %s: %v", PostgresEnv, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// InsertOnlyRiver is a River client on db that is never started: a test
// queues jobs with it, or hands it to code that does, and looks at them
// in river_job rather than running them.
func InsertOnlyRiver(t testing.TB, db *store.DB) *river.Client[*sql.Tx] {
	t.Helper()
	rc, err := river.NewClient(db.RiverDriver(), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}
