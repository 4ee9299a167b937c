package store

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStmts bounds the statement cache; the queries that use it are
// constants, so the bound only guards against a caller building SQL.
const maxCachedStmts = 256

// stmtCache keeps statements prepared on SQLite's one writer connection.
// A profile of fact ingest showed SQLite parsing SQL for a quarter of the
// CPU: every ExecContext on a string prepares it anew. PostgreSQL's driver
// (pgx) caches prepared statements per connection itself.
//
// A statement cannot be prepared while a transaction holds the one writer
// connection (database/sql would wait for it forever), so a miss runs the
// statement unprepared and is prepared after the transaction, by the InTx
// or InDurableTx that ran it.
type stmtCache struct {
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	missed map[string]bool
}

// Exec runs query in tx, through the statement cache on SQLite.
func (db *DB) Exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if s := db.cached(ctx, tx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// Query runs query in tx, through the statement cache on SQLite.
func (db *DB) Query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if s := db.cached(ctx, tx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// QueryRow runs query in tx, through the statement cache on SQLite.
func (db *DB) QueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if s := db.cached(ctx, tx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// Stmt returns tx's handle on query prepared, for a caller that runs it
// many times in one transaction: from the cache on SQLite, else prepared
// in tx (and closed with it). Handing out a tx-bound handle costs an
// allocation and a lock each time, so a loop should take one and reuse it.
func (db *DB) Stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if s := db.cached(ctx, tx, query); s != nil {
		return s, nil
	}
	return tx.PrepareContext(ctx, query)
}

// cached returns tx's handle on the prepared statement for query, or nil
// (noting the miss) when it is not prepared yet or the database is not
// SQLite. Statements bound to tx are closed with it; the prepared statement
// stays on the connection.
func (db *DB) cached(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	if db.Dialect != SQLite {
		return nil
	}
	c := &db.stmts
	c.mu.Lock()
	s := c.stmts[query]
	if s == nil && len(c.stmts)+len(c.missed) < maxCachedStmts {
		if c.missed == nil {
			c.missed = map[string]bool{}
		}
		c.missed[query] = true
	}
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return tx.StmtContext(ctx, s)
}

// prepareMissed prepares the statements that missed the cache. It runs
// after a transaction, when the writer connection is free; a statement
// that fails to prepare (a table not migrated yet) is tried again on its
// next miss.
func (db *DB) prepareMissed(ctx context.Context) {
	if db.Dialect != SQLite {
		return
	}
	c := &db.stmts
	c.mu.Lock()
	missed := c.missed
	c.missed = nil
	c.mu.Unlock()
	for q := range missed {
		s, err := db.Write.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if c.stmts == nil {
			c.stmts = map[string]*sql.Stmt{}
		}
		if old := c.stmts[q]; old != nil {
			_ = old.Close()
		}
		c.stmts[q] = s
		c.mu.Unlock()
	}
}

// CachedStatements is how many statements the cache holds, for tests.
func (db *DB) CachedStatements() int {
	db.stmts.mu.Lock()
	defer db.stmts.mu.Unlock()
	return len(db.stmts.stmts)
}

func (db *DB) closeStmts() {
	db.stmts.mu.Lock()
	defer db.stmts.mu.Unlock()
	for _, s := range db.stmts.stmts {
		_ = s.Close()
	}
	db.stmts.stmts = nil
}
