package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/riverqueue/river/rivermigrate"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Migration 21: a gate give-up queued before it had a spare attempt
// (max_attempts 8) and lost at its last attempt on PostgreSQL was discarded
// by River's rescuer, which retries only below max_attempts, so the runs it
// was to complete spun for ever. On PostgreSQL the give-ups still to run get
// max_attempts 9; those that ended, other kinds and give-ups queued with the
// spare attempt are left. On SQLite nothing changes (the next start makes a
// lost job available whatever its max_attempts). A new database, whose
// River tables are made after ripcord's migrations, migrates as before.
func TestGatesGaveUpSpareAttemptMigration(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := migratedTo(t, dbURL, 20)
		m, err := rivermigrate.New(db.RiverDriver(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			t.Fatal(err)
		}
		type job struct {
			kind, state        string
			attempt, max, want int // want: max_attempts after, on PostgreSQL
		}
		jobs := map[string]job{
			"give-up lost at its last attempt":      {"gates_gave_up", "running", 8, 8, 9},
			"give-up waiting for its retry":         {"gates_gave_up", "retryable", 3, 8, 9},
			"give-up queued":                        {"gates_gave_up", "available", 0, 8, 9},
			"give-up scheduled":                     {"gates_gave_up", "scheduled", 1, 8, 9},
			"give-up queued with the spare":         {"gates_gave_up", "available", 0, 9, 9},
			"give-up that completed":                {"gates_gave_up", "completed", 1, 8, 8},
			"give-up discarded":                     {"gates_gave_up", "discarded", 8, 8, 8},
			"verdict written":                       {"gates_report", "completed", 1, 9, 9},
			"another kind lost at its last attempt": {"deliveries", "running", 8, 8, 8},
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
		if err := db.UpTo(ctx, 21); err != nil {
			t.Fatalf("migrate to 21: %v", err)
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
				t.Errorf("%s: max_attempts %d after migration 21, want %d", ids[id], got, want)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != len(jobs) {
			t.Errorf("%d jobs after migration 21, want %d", n, len(jobs))
		}
		if err := db.DownTo(ctx, 20); err != nil {
			t.Fatalf("migrate down to 20: %v", err)
		}
		if err := db.UpTo(ctx, 21); err != nil {
			t.Fatalf("migrate to 21 again: %v", err)
		}

		// A new database: ripcord's migrations run before River's tables exist.
		fresh, err := store.Open(ctx, testdb.URL(t, string(db.Dialect)))
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if err := fresh.UpTo(ctx, 21); err != nil {
			t.Fatalf("a new database, to 21 before River's tables: %v", err)
		}
		if _, err := fresh.Migrate(ctx); err != nil {
			t.Fatalf("a new database: %v", err)
		}
	})
}
