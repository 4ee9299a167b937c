package rolloutflow

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// Two transactions that each add a line to one rollout's audit, the second
// while the first is still open, both commit, the lines in commit order.
// Numbered by MAX(n)+1 alone, both took the same number on PostgreSQL and
// the second failed on the primary key: an operator's abort that met a
// tick was answered with a 500. (SQLite's one writer cannot interleave
// them, so the test is PostgreSQL's.)
func TestAuditLinesOfTwoTransactionsAtOnceBothLand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarnessOn(t, testdb.URL(t, "postgres"), "stop", "", time.Minute)
	h.start(nil)
	before, err := listAudit(ctx, h.x.deps.DB.Read, h.id)
	if err != nil {
		t.Fatal(err)
	}
	db := h.x.deps.DB.Write
	first, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback()
	if err := insertAudit(ctx, first, h.id, time.Now(), "test", "first"); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			second <- err
			return
		}
		defer tx.Rollback()
		if err := insertAudit(ctx, tx, h.id, time.Now(), "test", "second"); err != nil {
			second <- err
			return
		}
		second <- tx.Commit()
	}()
	// The second insert waits for the first's row with the same number.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := h.x.deps.DB.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_locks WHERE NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second transaction's insert never waited for the first's")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second transaction's audit line: %v", err)
	}
	after, err := listAudit(ctx, h.x.deps.DB.Read, h.id)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)+2 || after[len(after)-2].Message != "first" || after[len(after)-1].Message != "second" {
		t.Errorf("audit after both commits: %+v, want the %d lines before and then first, second", after, len(before))
	}
}
