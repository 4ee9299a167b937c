package store_test

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
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
	t.Parallel()
	testMaxAttemptsMigration(t, 20, map[string]attemptsJob{
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
	}, func(t *testing.T, db *store.DB) {
		if db.Dialect == store.SQLite {
			// What makes the migration needless there: the lost jobs run again.
			if _, err := db.RecoverOrphanedJobs(context.Background()); err != nil {
				t.Fatal(err)
			}
			var running int
			if err := db.Read.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM river_job WHERE state = 'running'`).Scan(&running); err != nil {
				t.Fatal(err)
			}
			if running != 0 {
				t.Errorf("%d jobs still running after the start's recovery, want none", running)
			}
		}
	})
}
