package store_test

import "testing"

// Migration 21: a gate give-up queued before it had a spare attempt
// (max_attempts 8) and lost at its last attempt on PostgreSQL was discarded
// by River's rescuer, which retries only below max_attempts, so the runs it
// was to complete spun for ever. On PostgreSQL the give-ups still to run get
// max_attempts 9; those that ended, other kinds and give-ups queued with the
// spare attempt are left. On SQLite nothing changes (the next start makes a
// lost job available whatever its max_attempts). A new database, whose
// River tables are made after ripcord's migrations, migrates as before.
func TestGatesGaveUpSpareAttemptMigration(t *testing.T) {
	t.Parallel()
	testMaxAttemptsMigration(t, 21, map[string]attemptsJob{
		"give-up lost at its last attempt":      {"gates_gave_up", "running", 8, 8, 9},
		"give-up waiting for its retry":         {"gates_gave_up", "retryable", 3, 8, 9},
		"give-up queued":                        {"gates_gave_up", "available", 0, 8, 9},
		"give-up scheduled":                     {"gates_gave_up", "scheduled", 1, 8, 9},
		"give-up queued with the spare":         {"gates_gave_up", "available", 0, 9, 9},
		"give-up that completed":                {"gates_gave_up", "completed", 1, 8, 8},
		"give-up discarded":                     {"gates_gave_up", "discarded", 8, 8, 8},
		"verdict written":                       {"gates_report", "completed", 1, 9, 9},
		"another kind lost at its last attempt": {"deliveries", "running", 8, 8, 8},
	}, nil)
}
