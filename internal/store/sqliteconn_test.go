package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// openKept opens a one-connection pool of stmtConns keeping max statements
// on a new SQLite file, with a table t (a INTEGER PRIMARY KEY).
func openKept(t *testing.T, max int) (*sql.DB, *sql.Conn) {
	t.Helper()
	db, err := openSQLitePool("file:"+filepath.Join(t.TempDir(), "kept.db")+"?_pragma=journal_mode(WAL)", max)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, `CREATE TABLE t (a INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return db, conn
}

// kept is what conn's stmtConn keeps: the SQL, most recently used first,
// and how many statements it prepared to keep.
func kept(t *testing.T, conn *sql.Conn) (queries []string, prepares int) {
	queries, prepares, _ = keptClosed(t, conn)
	return queries, prepares
}

// keptClosed is kept, and how many kept statements were closed.
func keptClosed(t *testing.T, conn *sql.Conn) (queries []string, prepares, closes int) {
	t.Helper()
	err := conn.Raw(func(dc any) error {
		c := dc.(*stmtConn)
		c.mu.Lock()
		defer c.mu.Unlock()
		for el := c.lru.Front(); el != nil; el = el.Next() {
			queries = append(queries, el.Value.(*connStmt).query)
		}
		prepares, closes = c.prepares, c.closes
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return queries, prepares, closes
}

func column(t *testing.T, rows *sql.Rows) []int {
	t.Helper()
	var got []int
	for rows.Next() {
		var a int
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}
	return got
}

const (
	insertT = `INSERT INTO t (a) VALUES (?)`
	selectT = `SELECT a FROM t WHERE a >= ? ORDER BY a`
)

func TestSQLiteConnPreparesEachStatementOnce(t *testing.T) {
	_, conn := openKept(t, 8)
	ctx := context.Background()
	for _, a := range []int{3, 1, 2} {
		if _, err := conn.ExecContext(ctx, insertT, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, from := range []int{1, 2, 3, 4} {
		rows, err := conn.QueryContext(ctx, selectT, from)
		if err != nil {
			t.Fatal(err)
		}
		want := []int{1, 2, 3}[min(from-1, 3):]
		if got := column(t, rows); !slices.Equal(got, want) {
			t.Errorf("from %d: %v, want %v (the arguments of an earlier run leaked into this one?)", from, got, want)
		}
	}
	queries, prepares := kept(t, conn)
	want := []string{selectT, insertT, `CREATE TABLE t (a INTEGER PRIMARY KEY)`}
	if !slices.Equal(queries, want) || prepares != 3 {
		t.Errorf("kept %q after %d prepares, want %q after 3", queries, prepares, want)
	}
}

// A query run again while its own rows are open (a loop over rows that
// asks the same question for each) gets its own statement.
func TestSQLiteConnRunsAStatementAgainInsideItsOwnRows(t *testing.T) {
	_, conn := openKept(t, 8)
	ctx := context.Background()
	for a := 1; a <= 3; a++ {
		if _, err := conn.ExecContext(ctx, insertT, a); err != nil {
			t.Fatal(err)
		}
	}
	outer, err := conn.QueryContext(ctx, selectT, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int
	for len(got) <= 3 && outer.Next() { // more than 3: the inner runs reset the outer

		var a int
		if err := outer.Scan(&a); err != nil {
			t.Fatal(err)
		}
		inner, err := conn.QueryContext(ctx, selectT, a)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, column(t, inner))
	}
	if err := errors.Join(outer.Err(), outer.Close()); err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{1, 2, 3}, {2, 3}, {3}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("inner queries: %v, want %v", got, want)
	}
	if _, prepares := kept(t, conn); prepares != 3 {
		t.Errorf("%d statements prepared to keep, want 3 (the inner runs are not kept)", prepares)
	}
}

func TestSQLiteConnDropsTheLeastRecentlyUsed(t *testing.T) {
	_, conn := openKept(t, 2)
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, insertT, 1); err != nil {
		t.Fatal(err)
	}
	// The select's rows stay open while two more statements push it out.
	open, err := conn.QueryContext(ctx, selectT, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`SELECT count(*) FROM t`, `SELECT max(a) FROM t`} {
		var n int
		if err := conn.QueryRowContext(ctx, q).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s: %d, %v", q, n, err)
		}
	}
	queries, _, closes := keptClosed(t, conn)
	if !slices.Equal(queries, []string{`SELECT max(a) FROM t`, `SELECT count(*) FROM t`}) {
		t.Errorf("kept %q, want the two latest", queries)
	}
	if closes != 2 {
		t.Errorf("%d statements closed, want 2 (the create and the insert; the select is busy)", closes)
	}
	// Dropped while busy, it still reads to its end, and is closed then.
	if got := column(t, open); !slices.Equal(got, []int{1}) {
		t.Errorf("rows of a dropped statement: %v, want [1]", got)
	}
	if _, _, closes := keptClosed(t, conn); closes != 3 {
		t.Errorf("%d statements closed once the dropped one's rows were, want 3", closes)
	}
	rows, err := conn.QueryContext(ctx, selectT, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := column(t, rows); !slices.Equal(got, []int{1}) {
		t.Errorf("the dropped query run again: %v, want [1]", got)
	}
	if _, prepares := kept(t, conn); prepares != 6 {
		t.Errorf("%d statements prepared to keep, want 6 (create, insert, select, two more, the select again)", prepares)
	}
}

// A run that fails, or that its context ends, leaves the statement ready
// for the next.
func TestSQLiteConnStatementOutlivesAFailedRun(t *testing.T) {
	_, conn := openKept(t, 8)
	ctx := context.Background()
	for a := 1; a <= 3; a++ {
		if _, err := conn.ExecContext(ctx, insertT, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.ExecContext(ctx, insertT, 2); err == nil {
		t.Fatal("a second row with a = 2 was inserted")
	}
	if _, err := conn.ExecContext(ctx, insertT, 4); err != nil {
		t.Fatalf("the insert after a failed one: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	rows, err := conn.QueryContext(cctx, selectT, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	cancel()
	for rows.Next() {
	}
	rows.Close()
	again, err := conn.QueryContext(ctx, selectT, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := column(t, again); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("the query after a cancelled run: %v, want [1 2 3 4]", got)
	}
	if _, prepares := kept(t, conn); prepares != 3 {
		t.Errorf("%d statements prepared to keep, want 3", prepares)
	}
}

// A kept statement follows a change of the schema (SQLite prepares it
// again), and another connection's change is seen.
func TestSQLiteConnStatementFollowsTheSchema(t *testing.T) {
	db, conn := openKept(t, 8)
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, insertT, 1); err != nil {
		t.Fatal(err)
	}
	columns := func() []string {
		rows, err := conn.QueryContext(ctx, `SELECT * FROM t`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	if got := columns(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("columns %q", got)
	}
	db.SetMaxOpenConns(2)
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `ALTER TABLE t ADD COLUMN b TEXT`); err != nil {
		t.Fatal(err)
	}
	if got := columns(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("columns after another connection added one: %q, want [a b]", got)
	}
}
