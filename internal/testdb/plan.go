package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
)

// Plan is the plan dialect's database makes for query with args, one line
// per row: SQLite's EXPLAIN QUERY PLAN details, PostgreSQL's EXPLAIN text.
// q is a connection pool or a transaction (one that SET LOCAL a planner
// setting, say).
func Plan(t testing.TB, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, dialect store.Dialect, query string, args ...any) []string {
	t.Helper()
	explain := "EXPLAIN QUERY PLAN "
	if dialect == store.Postgres {
		explain = "EXPLAIN "
	}
	rows, err := q.QueryContext(context.Background(), explain+query, args...)
	if err != nil {
		t.Fatalf("plan of %s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new(any)
		}
		if err := rows.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		line := *(vals[len(vals)-1].(*any))
		if b, ok := line.([]byte); ok {
			line = string(b)
		}
		plan = append(plan, fmt.Sprint(line))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
