// Package sqlplan is test support: pools for a store's SQLite database that
// ask SQLite for the plan of every statement before they run it (EXPLAIN
// QUERY PLAN, with the statement's own arguments), so that a test sees the
// plans of the statements the store really sends, not of copies of them.
// SQLite plans without statistics (ripcord never runs ANALYZE), so the plan
// on an empty database is the plan on a year's.
package sqlplan

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
)

// Query is a statement and SQLite's plan of it, one line a step.
type Query struct{ Query, Plan string }

// OneLine is the statement on one line, for a test's message.
func (q Query) OneLine() string { return strings.Join(strings.Fields(q.Query), " ") }

// Log keeps the plan of every statement run through the pools.
type Log struct {
	mu    sync.Mutex
	plans []Query
}

// Reset forgets the plans kept so far.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.plans = nil
}

// Taken is the plans kept since the last Reset, in the order run.
func (l *Log) Taken() []Query {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.plans
}

func (l *Log) add(q Query) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.plans = append(l.plans, q)
}

// Reads puts a read pool in db that plans every statement it runs.
func Reads(t testing.TB, db *store.DB) *Log {
	t.Helper()
	path := sqlitePath(t, db)
	l := &Log{}
	old := db.Read
	db.Read = sql.OpenDB(connector{drv: old.Driver(), log: l,
		dsn: "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=query_only(ON)"})
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Read.Close() })
	return l
}

// All puts pools in db, for writing (one connection, as the store has it)
// and reading, that plan every statement they run: for a store that reads
// inside its write transactions too.
func All(t testing.TB, db *store.DB) *Log {
	t.Helper()
	path := sqlitePath(t, db)
	l := &Log{}
	oldWrite, oldRead := db.Write, db.Read
	db.Write = sql.OpenDB(connector{drv: oldWrite.Driver(), log: l,
		dsn: "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_txlock=immediate"})
	db.Write.SetMaxOpenConns(1)
	db.Read = sql.OpenDB(connector{drv: oldRead.Driver(), log: l,
		dsn: "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=query_only(ON)"})
	for _, p := range []*sql.DB{oldWrite, oldRead} {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { db.Write.Close(); db.Read.Close() })
	return l
}

// sqlitePath is db's file.
func sqlitePath(t testing.TB, db *store.DB) string {
	t.Helper()
	if db.Dialect != store.SQLite {
		t.Fatalf("sqlplan plans SQLite's statements, not %s's", db.Dialect)
	}
	path, err := store.SQLitePath(db.Source)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

type connector struct {
	drv driver.Driver
	dsn string
	log *Log
}

// sqliteConn is what the SQLite driver's connection offers database/sql;
// conn passes it all on, so that a pool of them behaves as the store's own.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
}

func (c connector) Connect(context.Context) (driver.Conn, error) {
	dc, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	sc, ok := dc.(sqliteConn)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("the SQLite driver's connection (%T) lacks a method database/sql uses", dc)
	}
	return conn{sqliteConn: sc, log: c.log}, nil
}

func (c connector) Driver() driver.Driver { return c.drv }

type conn struct {
	sqliteConn
	log *Log
}

func (c conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.explain(ctx, query, args); err != nil {
		return nil, err
	}
	return c.sqliteConn.QueryContext(ctx, query, args)
}

var param = regexp.MustCompile(`\$(\d+)`)

// PrepareContext plans a statement the store prepares (its hot reads) with
// its parameters NULL: SQLite's plan does not depend on their values.
func (c conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var unbound []driver.NamedValue
	for _, m := range param.FindAllStringSubmatch(query, -1) {
		n, _ := strconv.Atoi(m[1])
		for len(unbound) < n {
			unbound = append(unbound, driver.NamedValue{Ordinal: len(unbound) + 1})
		}
	}
	if err := c.explain(ctx, query, unbound); err != nil {
		return nil, err
	}
	return c.sqliteConn.PrepareContext(ctx, query)
}

func (c conn) explain(ctx context.Context, query string, args []driver.NamedValue) error {
	rows, err := c.sqliteConn.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args)
	if err != nil {
		return fmt.Errorf("plan of %s: %w", query, err)
	}
	var lines []string
	vals := make([]driver.Value, len(rows.Columns()))
	for rows.Next(vals) == nil {
		lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
	}
	rows.Close()
	c.log.add(Query{Query: query, Plan: strings.Join(lines, "\n")})
	return nil
}
