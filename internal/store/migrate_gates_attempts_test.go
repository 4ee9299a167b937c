package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/riverqueue/river/rivermigrate"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Migration 20: gate evaluations and verdicts queued before they had a
// spare attempt (max_attempts 8, or 5 for the oldest evaluations) and lost
// at their last attempt on PostgreSQL were discarded by River's rescuer,
// which retries only below max_attempts, so their runs spun for ever. On
// PostgreSQL those still to run get max_attempts 9, the attempt that only
// gives up; those that ended, other kinds and jobs queued with the spare
// attempt are left. On SQLite the next start makes such a job available
// whatever its max_attempts, so nothing changes. A new database, whose
// River tables are made after ripcord's migrations, migrates as before.
func TestGatesSpareAttemptMigration(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := migratedTo(t, dbURL, 19)
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
			"evaluation waiting for its retry":      {"gates_evaluate", "retryable", 3, 8, 9},
			"evaluation lost at its last attempt":   {"gates_evaluate", "running", 8, 8, 9},
			"evaluation queued":                     {"gates_evaluate", "available", 0, 8, 9},
			"evaluation of 5 attempts scheduled":    {"gates_evaluate", "scheduled", 2, 5, 9},
			"verdict lost at its last attempt":      {"gates_report", "running", 8, 8, 9},
			"verdict waiting for its retry":         {"gates_report", "retryable", 1, 8, 9},
			"evaluation queued with the spare":      {"gates_evaluate", "available", 0, 9, 9},
			"evaluation that gave up":               {"gates_evaluate", "discarded", 8, 8, 8},
			"verdict written":                       {"gates_report", "completed", 1, 8, 8},
			"verdict cancelled":                     {"gates_report", "cancelled", 8, 8, 8},
			"give-up, which has no spare attempt":   {"gates_gave_up", "retryable", 1, 8, 8},
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
		if err := db.UpTo(ctx, 20); err != nil {
			t.Fatalf("migrate to 20: %v", err)
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
				t.Errorf("%s: max_attempts %d after migration 20, want %d", ids[id], got, want)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != len(jobs) {
			t.Errorf("%d jobs after migration 20, want %d", n, len(jobs))
		}
		if db.Dialect == store.SQLite {
			// What makes the migration needless there: the lost jobs run again.
			if _, err := db.RecoverOrphanedJobs(ctx); err != nil {
				t.Fatal(err)
			}
			var running int
			if err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE state = 'running'`).Scan(&running); err != nil {
				t.Fatal(err)
			}
			if running != 0 {
				t.Errorf("%d jobs still running after the start's recovery, want none", running)
			}
		}
		if err := db.DownTo(ctx, 19); err != nil {
			t.Fatalf("migrate down to 19: %v", err)
		}
		if err := db.UpTo(ctx, 20); err != nil {
			t.Fatalf("migrate to 20 again: %v", err)
		}

		// A new database: ripcord's migrations run before River's tables exist.
		fresh, err := store.Open(ctx, testdb.URL(t, string(db.Dialect)))
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if err := fresh.UpTo(ctx, 20); err != nil {
			t.Fatalf("a new database, to 20 before River's tables: %v", err)
		}
		if _, err := fresh.Migrate(ctx); err != nil {
			t.Fatalf("a new database: %v", err)
		}
	})
}
