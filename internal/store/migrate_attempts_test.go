package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/riverqueue/river/rivermigrate"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// attemptsJob is a River job as a migration that raises max_attempts finds it.
type attemptsJob struct {
	kind, state        string
	attempt, max, want int // want: max_attempts after, on PostgreSQL
}

// testMaxAttemptsMigration checks migration version, which raises the
// max_attempts of some River jobs on PostgreSQL and changes nothing on
// SQLite: jobs are queued at version-1, with River's tables made, and after
// the migration each has its want (PostgreSQL) or its max (SQLite). after,
// if not nil, looks at the migrated database first. The migration then goes
// down and up again, and a new database, whose River tables are made after
// ripcord's migrations, migrates through it as well.
func testMaxAttemptsMigration(t *testing.T, version int, jobs map[string]attemptsJob, after func(*testing.T, *store.DB)) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := migratedTo(t, dbURL, int64(version-1))
		m, err := rivermigrate.New(db.RiverDriver(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			t.Fatal(err)
		}
		args := "jsonb('{}')"
		if db.Dialect == store.Postgres {
			args = "'{}'"
		}
		ids := map[int64]string{}
		for name, j := range jobs {
			finalized := "NULL"
			if j.state == "completed" || j.state == "cancelled" || j.state == "discarded" {
				finalized = "CURRENT_TIMESTAMP"
			}
			var id int64
			err := db.Write.QueryRowContext(ctx, fmt.Sprintf(`INSERT INTO river_job (args, kind, state, attempt, max_attempts, finalized_at)
				VALUES (%s, $1, $2, $3, $4, %s) RETURNING id`, args, finalized), j.kind, j.state, j.attempt, j.max).Scan(&id)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ids[id] = name
		}
		if err := db.UpTo(ctx, int64(version)); err != nil {
			t.Fatalf("migrate to %d: %v", version, err)
		}
		rows, err := db.Read.QueryContext(ctx, `SELECT id, max_attempts FROM river_job`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var id int64
			var got int
			if err := rows.Scan(&id, &got); err != nil {
				t.Fatal(err)
			}
			n++
			j := jobs[ids[id]]
			want := j.want
			if db.Dialect == store.SQLite {
				want = j.max
			}
			if got != want {
				t.Errorf("%s: max_attempts %d after migration %d, want %d", ids[id], got, version, want)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != len(jobs) {
			t.Errorf("%d jobs after migration %d, want %d", n, version, len(jobs))
		}
		if after != nil {
			after(t, db)
		}
		if err := db.DownTo(ctx, int64(version-1)); err != nil {
			t.Fatalf("migrate down to %d: %v", version-1, err)
		}
		if err := db.UpTo(ctx, int64(version)); err != nil {
			t.Fatalf("migrate to %d again: %v", version, err)
		}

		// A new database: ripcord's migrations run before River's tables exist.
		fresh, err := store.Open(ctx, testdb.URL(t, string(db.Dialect)))
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if err := fresh.UpTo(ctx, int64(version)); err != nil {
			t.Fatalf("a new database, to %d before River's tables: %v", version, err)
		}
		if _, err := fresh.Migrate(ctx); err != nil {
			t.Fatalf("a new database: %v", err)
		}
	})
}
