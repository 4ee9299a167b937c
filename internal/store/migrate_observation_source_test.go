package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// Migration 15 gives the observations stored before it the source of a
// kept fact of the same workload, so an agent's inventory can judge them;
// one with no such fact keeps none. It goes down and up again.
func TestObservationSourceMigrationFillsInTheSource(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := migratedTo(t, dbURL, 14)
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.Write.ExecContext(ctx, q, args...); err != nil {
				t.Fatal(err)
			}
		}
		for id, f := range map[string][3]string{
			"f1": {"deployment", "r1", "uid-1"}, "f2": {"rollout", "r2", "uid-2"}, "f3": {"task", "r3", "uid-3"},
			"f4": {"deployment", "r4", "uid-other"}} {
			body, _ := json.Marshal(map[string]any{"source": f[0], "cluster": "prod-eu", "uid": f[2], "release_id": f[1]})
			exec(`INSERT INTO facts (id, release_id, source, received_at, body) VALUES ($1, $2, $3, 1, $4)`, id, f[1], f[0], string(body))
		}
		for key, o := range map[string][2]string{"prod-eu/shop/a": {"r1", "uid-1"}, "prod-eu/shop/b": {"r2", "uid-2"},
			"prod-eu/shop/c": {"r3", "uid-3"}, "prod-eu/shop/d": {"r4", "uid-4"}} {
			body, _ := json.Marshal(map[string]any{"cluster": "prod-eu", "namespace": "shop", "name": key[len(key)-1:],
				"uid": o[1], "release_id": o[0], "phase": "Healthy"})
			exec(`INSERT INTO observations (key, release_id, observed_at, body) VALUES ($1, $2, 1, $3)`, key, o[0], string(body))
		}
		check := func(step string, want map[string]string) {
			t.Helper()
			rows, err := db.Read.QueryContext(ctx, `SELECT key, body FROM observations`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			got := map[string]string{}
			for rows.Next() {
				var key string
				var body []byte
				if err := rows.Scan(&key, &body); err != nil {
					t.Fatal(err)
				}
				var o struct {
					Source *string `json:"source"`
					UID    string  `json:"uid"`
				}
				if err := json.Unmarshal(body, &o); err != nil {
					t.Fatalf("%s: %s: %v", step, body, err)
				}
				if o.Source != nil {
					got[key] = *o.Source
				}
			}
			if len(got) != len(want) {
				t.Errorf("%s: sources %v, want %v", step, got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: sources %v, want %v", step, got, want)
				}
			}
		}
		filled := map[string]string{"prod-eu/shop/a": "deployment", "prod-eu/shop/b": "rollout"}
		if err := db.UpTo(ctx, 15); err != nil {
			t.Fatalf("migrate to 15: %v", err)
		}
		check("after migration 15", filled)
		if err := db.DownTo(ctx, 14); err != nil {
			t.Fatalf("migrate down to 14: %v", err)
		}
		check("after migration 15 down", map[string]string{})
		if err := db.UpTo(ctx, 15); err != nil {
			t.Fatalf("migrate to 15 again: %v", err)
		}
		check("after migration 15 down and up", filled)
	})
}
