package store

import (
	"context"
	"path/filepath"
	"testing"
)

// Migration 9 moves SQLite's payloads out of the deliveries table; a
// database that already holds deliveries must keep every id, state and
// payload across it, and going back down must put them where they were.
func TestDeliveryBodiesMigrationKeepsEveryPayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := db.goose()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"d-1": `{"zen":"one"}`, "d-2": `{"zen":"two"}`, "d-3": `{"zen":"three"}`}
	for _, id := range []string{"d-2", "d-1", "d-3"} {
		_, err := db.Write.ExecContext(ctx, `INSERT INTO deliveries (id, event, body, received_at, state) VALUES ($1, 'ping', $2, 1, 'processed')`,
			id, []byte(want[id]))
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatalf("migrate to 9: %v", err)
	}
	read := func(query string) map[string]string {
		t.Helper()
		rows, err := db.Write.QueryContext(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]string{}
		for rows.Next() {
			var id, state string
			var body []byte
			if err := rows.Scan(&id, &state, &body); err != nil {
				t.Fatal(err)
			}
			if state != "processed" {
				t.Errorf("delivery %s has state %q after the migration, want processed", id, state)
			}
			got[id] = string(body)
		}
		return got
	}
	check := func(step string, got map[string]string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d deliveries with payloads, want %d: %v", step, len(got), len(want), got)
		}
		for id, body := range want {
			if got[id] != body {
				t.Errorf("%s: payload of %s = %q, want %q", step, id, got[id], body)
			}
		}
	}
	check("up", read(`SELECT d.id, d.state, b.body FROM deliveries d JOIN delivery_bodies b ON b.seq = d.seq`))
	if _, err := p.DownTo(ctx, 8); err != nil {
		t.Fatalf("migrate down to 8: %v", err)
	}
	check("down", read(`SELECT id, state, body FROM deliveries`))
}
