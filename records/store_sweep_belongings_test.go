package records

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// releaseTables are the tables with a release_id column, and whether the
// sweep deletes a swept release's rows there. A table added with one
// fails TestSweepLeavesNoRowOfASweptRelease until it is listed here, so
// that someone decides whether its rows outlive their release.
var releaseTables = map[string]bool{
	"records":             true,
	"facts":               true,
	"release_check_notes": true,
	"rollback_reopened":   true,
	"rollouts":            true, // once done; its batches, readings, approvals and audit cascade
	"deployments":         true, // a foreign key, ON DELETE CASCADE
	// History: drift and stall events may have no record at all.
	"audit_events": false,
	// One per workload: dropped, the workload's next resync would be drift.
	"observations": false,
	// A workflow run's recovery (app/recoveryflow): it answers the run's
	// redeliveries and later attempts, whatever became of the release.
	"episodes": false,
	// What a cluster's agent was asked (app/clusteractions): its key
	// keeps an action from being asked twice.
	"cluster_actions": false,
	// A rollback pull request whose release was never stored: none to sweep.
	"rollback_unrecorded": false,
}

// rolloutTables hold a rollout's rows by rollout_id.
var rolloutTables = []string{"rollout_batches", "rollout_readings", "rollout_approvals", "rollout_audit"}

// A swept release leaves no row behind in any table that names it, and a
// release kept keeps all of its rows; so do the rows left behind by
// releases swept before their rows went with them. A rollout not done
// stays, whatever its release: its ticks still read and write it.
func TestSweepLeavesNoRowOfASweptRelease(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	now := at(0).Add(200 * day)
	history := thatRan([]Record{
		record("A9", StateHealthy, 9, healthyAt(9)),
		record("A8", StateSuperseded, 8),
		record("A7", StateSuperseded, 7),
		record("A6", StateFailed, 6),
		record("A5", StateSuperseded, 5),
		record("A4", StateSuperseded, 4), // swept, its rollout done
		record("A3", StateFailed, 3),     // kept while its rollout rolls back, then swept
	})
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		if got := tablesWithReleaseID(t, s); !slices.Equal(got, slices.Sorted(maps.Keys(releaseTables))) {
			t.Fatalf("tables with a release_id column: %v; list each in releaseTables, saying whether the sweep deletes its rows",
				got)
		}
		for _, r := range history {
			putRecord(t, s, r)
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := s.db.Write.Exec(q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		// A kept release, a swept one, and one swept before its rows went
		// with it: a row in every table that belongs to a release.
		for _, rel := range []string{"A9", "A4", "swept-before"} {
			exec(`INSERT INTO facts (id, release_id, source, received_at, body) VALUES ($1, $1, 'rollout', 0, '{}')`, rel)
			exec(`INSERT INTO release_check_notes (release_id, note) VALUES ($1, 'opening the rollback')`, rel)
			exec(`INSERT INTO rollback_reopened (release_id, reopened_at, reopened_by) VALUES ($1, 0, 'octocat')`, rel)
			putRollout(t, s, "ro-"+rel, rel, "done")
			if rel != "swept-before" {
				exec(`INSERT INTO deployments (release_id, updated_at) VALUES ($1, 0)`, rel)
			}
		}
		putRollout(t, s, "ro-A3", "A3", "rollback")
		putRollout(t, s, "ro-running-before", "running-before", "deploy")

		if n, left := sweep(t, s, now, 90*day); n != 1 || !slices.Equal(left, []string{"A3", "A5", "A6", "A7", "A8", "A9"}) {
			t.Fatalf("swept %d, left %v; want A4 swept and A3 kept while its rollout rolls back", n, left)
		}
		for table, goes := range releaseTables {
			if !goes || table == "facts" || table == "rollouts" {
				continue
			}
			for rel, want := range map[string]int{"A9": 1, "A4": 0, "swept-before": 0} {
				if table == "deployments" && rel == "swept-before" {
					continue
				}
				if got := count(t, s, `SELECT COUNT(*) FROM `+table+` WHERE release_id = $1`, rel); got != want {
					t.Errorf("%d rows of %s in %s after the sweep, want %d", got, rel, table, want)
				}
			}
		}
		// Facts may come before their release: only a swept release's go.
		for rel, want := range map[string]int{"A9": 1, "A4": 0, "swept-before": 1} {
			if got := count(t, s, `SELECT COUNT(*) FROM facts WHERE release_id = $1`, rel); got != want {
				t.Errorf("%d facts of %s after the sweep, want %d", got, rel, want)
			}
		}
		for id, want := range map[string]int{"ro-A9": 1, "ro-A4": 0, "ro-swept-before": 0, "ro-A3": 1, "ro-running-before": 1} {
			if got := count(t, s, `SELECT COUNT(*) FROM rollouts WHERE id = $1`, id); got != want {
				t.Errorf("rollout %s: %d after the sweep, want %d", id, got, want)
			}
			for _, table := range rolloutTables {
				if got := count(t, s, `SELECT COUNT(*) FROM `+table+` WHERE rollout_id = $1`, id); got != want {
					t.Errorf("rollout %s: %d rows in %s after the sweep, want %d", id, got, table, want)
				}
			}
		}

		// The rollout of A3 ends: the next sweep takes the release and it.
		exec(`UPDATE rollouts SET phase = 'done', status = 'failed' WHERE id = 'ro-A3'`)
		if again, left := sweep(t, s, now, 90*day); again != 1 || slices.Contains(left, "A3") {
			t.Errorf("second sweep deleted %d releases, left %v; want A3 deleted once its rollout ended", again, left)
		}
		if got := count(t, s, `SELECT COUNT(*) FROM rollouts WHERE id IN ('ro-A3', 'ro-running-before', 'ro-A9')`); got != 2 {
			t.Errorf("%d of the rollouts of A3 (done now), running-before (running) and A9 (kept) after the next sweep, want 2", got)
		}
	})
}

// putRollout stores a rollout of release in phase, with a row in each of
// rolloutTables.
func putRollout(t *testing.T, s *Store, id, release, phase string) {
	t.Helper()
	status := "running"
	if phase == "done" {
		status = "succeeded"
	}
	if _, err := s.db.Write.Exec(`INSERT INTO rollouts (id, release_id, repository, installation_id, app, environment,
		version, snapshot, machine, status, phase, created_at, updated_at)
		VALUES ($1, $2, 'acme/shop', 1, 'checkout', 'prod', 'v1', '{}', '{}', $3, $4, 0, 0)`, id, release, status, phase); err != nil {
		t.Fatalf("rollout %s: %v", id, err)
	}
	for _, q := range []string{
		`INSERT INTO rollout_batches (rollout_id, kind, stage, pass, batch, name, ord, state, dispatched_at, updated_at)
			VALUES ($1, 'deploy', 0, 0, 0, 'eu', 0, 'success', 0, 0)`,
		`INSERT INTO rollout_readings (rollout_id, stage, pass, batch, n, at, green) VALUES ($1, 0, -1, -1, 0, 0, TRUE)`,
		`INSERT INTO rollout_approvals (rollout_id, stage, login, approve, at) VALUES ($1, 0, 'octocat', TRUE, 0)`,
		`INSERT INTO rollout_audit (rollout_id, n, at, type, message) VALUES ($1, 0, 0, 'started', 'started')`,
	} {
		if _, err := s.db.Write.Exec(q, id); err != nil {
			t.Fatalf("rollout %s: %v", id, err)
		}
	}
}

// tablesWithReleaseID lists the tables of s's database with a release_id
// column, sorted.
func tablesWithReleaseID(t *testing.T, s *Store) []string {
	t.Helper()
	q := `SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c
		WHERE m.type = 'table' AND c.name = 'release_id' ORDER BY m.name`
	if s.db.Dialect == store.Postgres {
		q = `SELECT table_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND column_name = 'release_id' ORDER BY table_name`
	}
	rows, err := s.db.Read.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A withdrawn rollback whose pull request a person reopened holds its
// environment until the pull request is merged or closed again
// (app/rollbackflow): the sweep keeps it however old, and sweeps an old
// withdrawn rollback that holds nothing, or whose reopened pull request was
// merged.
func TestSweepKeepsAReopenedRollbackThatHoldsItsEnvironment(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	now := at(0).Add(200 * day)
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		putRecord(t, s, record("A9", StateHealthy, 9, healthyAt(9), lastFact(9)))
		withdrawn := func(rel string, m int) Record {
			r := record(rel, StateAborted, m, rollbackOf("A9"))
			r.PRURL, r.PRNumber = "https://github.com/acme/deploy/pull/"+rel, 7
			return r
		}
		for _, r := range []Record{withdrawn("held", 3), withdrawn("closed", 2), withdrawn("merged", 1)} {
			putRecord(t, s, r)
		}
		for _, q := range []string{
			`INSERT INTO rollback_reopened (release_id, reopened_at, reopened_by) VALUES ('held', 0, 'octocat')`,
			`INSERT INTO rollback_reopened (release_id, reopened_at, reopened_by) VALUES ('merged', 0, 'octocat')`,
			`UPDATE records SET merged_at = 1 WHERE release_id = 'merged'`,
		} {
			if _, err := s.db.Write.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if n, left := sweep(t, s, now, 90*day); n != 2 || !slices.Equal(left, []string{"A9", "held"}) {
			t.Errorf("swept %d, left %v; want closed and merged swept, the reopened rollback that holds its environment kept", n, left)
		}
	})
}
