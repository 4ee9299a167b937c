package store

import (
	"cmp"
	"container/list"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

// connStmts bounds the statements each SQLite connection keeps prepared.
// The SQL that ripcord and the job queue send is a few dozen constant
// strings; the bound is for statements built with a varying number of
// placeholders, of which the least recently used is dropped.
const connStmts = 128

// sqliteConnector opens SQLite connections that keep the statements they
// run prepared (stmtConn). SQLite's driver prepares every statement run on
// a connection anew, and parsing SQL was the largest part of what an idle
// server spends (the job queue's polls, a few a second, each a large
// statement) and a third of a test run's CPU under the race detector.
type sqliteConnector struct {
	driver.Connector     // the driver's own, on the driver "sqlite" names
	max              int // statements kept per connection; 0 is connStmts
}

// openSQLitePool opens a pool of stmtConns on dsn.
func openSQLitePool(dsn string, max int) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(sqliteConnector{Connector: c, max: max}), nil
}

func (c sqliteConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := dc.(sqliteConn)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("the SQLite driver's connection (%T) lacks a method database/sql uses", dc)
	}
	return &stmtConn{sqliteConn: sc, max: cmp.Or(c.max, connStmts), stmts: map[string]*list.Element{}, lru: list.New()}, nil
}

// sqliteConn is what the SQLite driver's connection offers database/sql;
// stmtConn passes all of it on.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// sqliteStmt is what the SQLite driver's statements offer.
type sqliteStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// stmtConn is a SQLite connection that keeps the statements run on it
// (ExecContext, QueryContext) prepared, up to max, the least recently used
// dropped first. The driver resets a statement after an Exec and when the
// rows of a Query are closed, so the next run binds its own arguments to a
// fresh start; SQLite prepares a statement again by itself when the schema
// changed. A statement whose rows are still open is busy: the same SQL run
// meanwhile (a query inside the loop over another's rows) is prepared for
// that run alone, as the driver does it.
//
// database/sql calls a connection from one goroutine at a time; mu makes
// no such assumption.
type stmtConn struct {
	sqliteConn
	mu       sync.Mutex
	max      int
	stmts    map[string]*list.Element // of *connStmt, by SQL
	lru      *list.List               // most recently used first
	prepares int                      // statements prepared to keep, for tests
	closes   int                      // and closed
}

// connStmt is a statement a stmtConn keeps.
type connStmt struct {
	query string
	stmt  sqliteStmt
	busy  bool // its rows are open
	gone  bool // dropped from the cache while busy: closed with its rows
}

// take returns the kept statement for query, prepared now if it is not
// kept yet, marked busy; nil when it is busy already (the caller then runs
// query on the connection, unkept).
func (c *stmtConn) take(ctx context.Context, query string) (*connStmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.stmts[query]; ok {
		s := el.Value.(*connStmt)
		if s.busy {
			return nil, nil
		}
		c.lru.MoveToFront(el)
		s.busy = true
		return s, nil
	}
	ds, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	st, ok := ds.(sqliteStmt)
	if !ok {
		ds.Close()
		return nil, fmt.Errorf("the SQLite driver's statement (%T) lacks a method", ds)
	}
	c.prepares++
	s := &connStmt{query: query, stmt: st, busy: true}
	c.stmts[query] = c.lru.PushFront(s)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		o := old.Value.(*connStmt)
		delete(c.stmts, o.query)
		if o.busy {
			o.gone = true
			continue
		}
		c.closes++
		_ = o.stmt.Close()
	}
	return s, nil
}

// give hands s back after its run; a statement dropped meanwhile is closed.
func (c *stmtConn) give(s *connStmt) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.busy = false
	if s.gone {
		c.closes++
		return s.stmt.Close()
	}
	return nil
}

// ExecContext runs query through its kept statement.
func (c *stmtConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	r, err := s.stmt.ExecContext(ctx, args)
	if gerr := c.give(s); err == nil && gerr != nil {
		return nil, gerr
	}
	return r, err
}

// QueryContext runs query through its kept statement, busy until the rows
// are closed.
func (c *stmtConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.QueryContext(ctx, args)
	if err != nil {
		_ = c.give(s)
		return nil, err
	}
	r, ok := rows.(sqliteRows)
	if !ok {
		// Not what the driver returns; closing them resets the statement.
		_ = rows.Close()
		_ = c.give(s)
		return nil, fmt.Errorf("the SQLite driver's rows (%T) lack a method", rows)
	}
	return &stmtRows{sqliteRows: r, conn: c, stmt: s}, nil
}

// Close closes the kept statements, then the connection. database/sql
// closes a connection only once its rows are closed.
func (c *stmtConn) Close() error {
	c.mu.Lock()
	var errs []error
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if err := el.Value.(*connStmt).stmt.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	c.stmts, c.lru = map[string]*list.Element{}, list.New()
	c.mu.Unlock()
	return errors.Join(append(errs, c.sqliteConn.Close())...)
}

// sqliteRows is what the SQLite driver's rows offer.
type sqliteRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// stmtRows are the rows of a kept statement, which closing hands back.
type stmtRows struct {
	sqliteRows
	conn   *stmtConn
	stmt   *connStmt
	closed bool
}

func (r *stmtRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.sqliteRows.Close()
	if gerr := r.conn.give(r.stmt); err == nil {
		err = gerr
	}
	return err
}
