package store

import "testing"

// Rows about to change are locked on PostgreSQL; SQLite has no such clause
// (its one writer serialises), and a query with it would not parse.
func TestForUpdateIsPostgresOnly(t *testing.T) {
	if got := (&DB{Dialect: Postgres}).ForUpdate(); got != " FOR UPDATE" {
		t.Errorf("PostgreSQL: %q, want \" FOR UPDATE\"", got)
	}
	if got := (&DB{Dialect: SQLite}).ForUpdate(); got != "" {
		t.Errorf("SQLite: %q, want none", got)
	}
}
