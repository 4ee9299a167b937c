package store_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// Migration 16 puts an observation's source in its key, so a Deployment
// and a Rollout of one name are two workloads: every observation that
// knows its source moves, one that does not keeps its key (the next fact
// of that name replaces it), none is lost. Down, a Deployment and a
// Rollout of one name become one again: the one observed last stays.
func TestObservationKeyMigrationPutsTheSourceInTheKey(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		db := migratedTo(t, dbURL, 15)
		insert := func(key, source, name, uid string, at int) {
			t.Helper()
			o := map[string]any{"cluster": "prod-eu", "namespace": "shop", "name": name, "uid": uid, "release_id": "r-" + uid, "phase": "Healthy"}
			if source != "" {
				o["source"] = source
			}
			body, _ := json.Marshal(o)
			if _, err := db.Write.ExecContext(ctx, `INSERT INTO observations (key, release_id, observed_at, body) VALUES ($1, $2, $3, $4)`,
				key, "r-"+uid, at, string(body)); err != nil {
				t.Fatal(err)
			}
		}
		insert("prod-eu/shop/a", "deployment", "a", "uid-a", 1)
		insert("prod-eu/shop/b", "rollout", "b", "uid-b", 1)
		insert("prod-eu/shop/c", "", "c", "uid-c", 1)
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
					UID string `json:"uid"`
				}
				if err := json.Unmarshal(body, &o); err != nil {
					t.Fatalf("%s: %s: %v", step, body, err)
				}
				got[key] = o.UID
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Errorf("%s: observations (key: uid) %v, want %v", step, got, want)
			}
		}
		if err := db.UpTo(ctx, 16); err != nil {
			t.Fatalf("migrate to 16: %v", err)
		}
		up := map[string]string{"prod-eu/shop/deployment/a": "uid-a", "prod-eu/shop/rollout/b": "uid-b", "prod-eu/shop/c": "uid-c"}
		check("after migration 16", up)
		// A Rollout a, observed after the Deployment a.
		insert("prod-eu/shop/rollout/a", "rollout", "a", "uid-ra", 2)
		if err := db.DownTo(ctx, 15); err != nil {
			t.Fatalf("migrate down to 15: %v", err)
		}
		check("after migration 16 down", map[string]string{"prod-eu/shop/a": "uid-ra", "prod-eu/shop/b": "uid-b", "prod-eu/shop/c": "uid-c"})
		if err := db.UpTo(ctx, 16); err != nil {
			t.Fatalf("migrate to 16 again: %v", err)
		}
		check("after migration 16 down and up", map[string]string{"prod-eu/shop/rollout/a": "uid-ra", "prod-eu/shop/rollout/b": "uid-b", "prod-eu/shop/c": "uid-c"})
	})
}
