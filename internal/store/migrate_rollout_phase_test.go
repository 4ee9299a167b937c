package store_test

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// Migration 10 gives rollouts their machine's phase as a column: rollouts
// stored before it get the phase their machine holds, on both databases,
// and the migration goes down and up again.
func TestRolloutPhaseMigrationFillsInThePhase(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := migratedTo(t, dbURL, 9)
		for id, phase := range map[string]string{"ro-1": "done", "ro-2": "bake"} {
			_, err := db.Write.ExecContext(ctx, `INSERT INTO rollouts (id, release_id, repository, installation_id, app, environment,
				version, snapshot, machine, status, created_at, updated_at)
				VALUES ($1, $2, 'acme/checkout', 1, 'checkout', 'prod', 'v1', '{}', $3, 'running', 1, 1)`,
				id, "rel-"+id, `{"status":"running","phase":"`+phase+`","stage":0}`)
			if err != nil {
				t.Fatal(err)
			}
		}
		check := func(step string) {
			t.Helper()
			got := map[string]string{}
			rows, err := db.Read.QueryContext(ctx, `SELECT id, phase FROM rollouts`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var id, phase string
				if err := rows.Scan(&id, &phase); err != nil {
					t.Fatal(err)
				}
				got[id] = phase
			}
			if got["ro-1"] != "done" || got["ro-2"] != "bake" || len(got) != 2 {
				t.Errorf("%s: phases %v, want ro-1 done and ro-2 bake", step, got)
			}
		}
		if err := db.UpTo(ctx, 10); err != nil {
			t.Fatalf("migrate to 10: %v", err)
		}
		check("after migration 10")
		if err := db.DownTo(ctx, 9); err != nil {
			t.Fatalf("migrate down to 9: %v", err)
		}
		if err := db.UpTo(ctx, 10); err != nil {
			t.Fatalf("migrate to 10 again: %v", err)
		}
		check("after migration 10 down and up")
	})
}
