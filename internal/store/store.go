// Package store opens ripcord's database — an embedded SQLite file by default, or
// PostgreSQL for several replicas — applies its migrations and hands out the
// connection pools that the rest of the server writes and reads through.
//
// Both databases are used through database/sql with the same SQL text
// (numbered $N placeholders work in both), so every query is tested on both.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Dialect names the database behind a DB.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Defaults for the connection pools.
const (
	// sqliteReaders is the number of read-only connections: WAL lets readers run
	// beside the single writer, so API reads never wait for a group commit.
	sqliteReaders     = 4
	postgresMaxConns  = 16
	sqliteBusyTimeout = 10 * time.Second
	// pingMargin is what Open's first ping may take beyond connecting.
	pingMargin = 5 * time.Second
)

// defaultConnectTimeout bounds each new PostgreSQL connection (dial,
// TLS, authentication) when the URL sets no connect_timeout (nor
// PGCONNECT_TIMEOUT): without it, a connection opened for a caller with no
// deadline of its own (the job queue's polls, the intake's commits,
// migrate) waits for ever on a server that accepted it and never answers.
// A variable for tests.
var defaultConnectTimeout = 10 * time.Second

// DB is an open database. Write serialises writers for SQLite (one connection,
// as River requires) and is the shared pool for PostgreSQL; Read is for queries
// that never write.
type DB struct {
	Dialect Dialect
	Write   *sql.DB
	Read    *sql.DB
	// Source is the URL without credentials, for logs.
	Source string

	checkpointer *checkpointer
	wal          *walSync // SQLite only
	serveLock    *os.File // SQLite only: see ClaimForServe
	gate         sync.Mutex
}

// Gate is held by a writer that writes steadily (the intake's group
// commit) while it writes, so that the checkpointer can find a moment
// without its writes to let SQLite's WAL start over (see checkpointer). A
// writer that holds it must hold it only for a transaction's length.
func (db *DB) Gate() *sync.Mutex { return &db.gate }

// ForUpdate is the clause that ends a SELECT of rows a transaction is about
// to change: " FOR UPDATE" on PostgreSQL, so that a concurrent transaction's
// change to them is waited for and read rather than lost to; nothing on
// SQLite, whose one writer already runs the two one after the other.
func (db *DB) ForUpdate() string {
	if db.Dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// Open opens the database named by a URL: sqlite://path/to/file.db (relative
// paths are relative to the working directory), sqlite:///abs/path.db, or
// postgres://user:pass@host:port/db?sslmode=disable.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	switch {
	case strings.HasPrefix(rawURL, "sqlite:"):
		return openSQLite(ctx, rawURL)
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return openPostgres(ctx, rawURL)
	default:
		return nil, fmt.Errorf("database: %q is not a database URL: expected sqlite://FILE or postgres://USER@HOST:PORT/DB", redact(rawURL))
	}
}

// SQLitePath returns the file of a sqlite:// URL.
func SQLitePath(rawURL string) (string, error) {
	rest := strings.TrimPrefix(rawURL, "sqlite:")
	rest = strings.TrimPrefix(rest, "//")
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest = rest[:i]
	}
	if rest == "" {
		return "", errors.New("database: sqlite:// URL names no file: expected sqlite://ripcord.db")
	}
	return rest, nil
}

func openSQLite(ctx context.Context, rawURL string) (*DB, error) {
	path, err := SQLitePath(rawURL)
	if err != nil {
		return nil, err
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("database: create folder for %s: %w", path, err)
		}
	}
	// synchronous=NORMAL is the connection's default: in WAL mode a commit then
	// survives a crash of the process but may be lost with the machine's power.
	// That is fine for job bookkeeping, which is redone; writes that must be
	// durable before an answer run with FULL (InDurableTx) or flush the WAL
	// (SyncWAL), which also persists every earlier commit in it.
	// wal_autocheckpoint(0): the checkpointer goroutine copies the WAL back
	// into the database, so no commit waits for a checkpoint.
	// journal_size_limit: when the WAL starts over it keeps up to 64 MiB of
	// the blocks it has (flushing blocks a file has is cheap, see
	// checkpointer); a WAL grown larger is cut back to that.
	pragmas := fmt.Sprintf("_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(%d)&_pragma=foreign_keys(ON)&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit(%d)&_txlock=immediate",
		sqliteBusyTimeout.Milliseconds(), walSizeLimit)
	dsn := "file:" + path + "?" + pragmas
	write, err := openSQLitePool(dsn, 0)
	if err != nil {
		return nil, fmt.Errorf("database: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxIdleTime(0)
	write.SetConnMaxLifetime(0)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("database: open %s: %w", path, err)
	}
	read, err := openSQLitePool("file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(ON)", 0)
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("database: open %s for reading: %w", path, err)
	}
	read.SetMaxOpenConns(sqliteReaders)
	read.SetMaxIdleConns(sqliteReaders)
	db := &DB{Dialect: SQLite, Write: write, Read: read, Source: "sqlite://" + path, wal: &walSync{path: path + "-wal"}}
	if err := db.startCheckpointer(path); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func openPostgres(ctx context.Context, rawURL string) (*DB, error) {
	cfg, err := stdlibConfig(rawURL)
	if err != nil {
		return nil, err
	}
	// pgx read connect_timeout from the URL, PGCONNECT_TIMEOUT or a
	// service file; 0 there is no limit, as in libpq.
	if cfg.ConnectTimeout == 0 && !connectTimeoutZero(rawURL) {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(postgresMaxConns)
	db.SetMaxIdleConns(postgresMaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pingTimeout := cfg.ConnectTimeout + pingMargin
	pingCtx, cancel := ctx, context.CancelFunc(func() {})
	if cfg.ConnectTimeout > 0 { // 0: the start waits without limit too
		pingCtx, cancel = context.WithTimeout(ctx, pingTimeout)
	}
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		var connectErr *pgconn.ConnectError
		// Each error is one line that names the setting, where it
		// pointed and pgx's reason (connectReason): it is what a
		// newcomer reads first when `serve` or `migrate` cannot start.
		var msg string
		switch {
		case !timedOut(err) || cfg.ConnectTimeout == 0:
			msg = fmt.Sprintf("database: cannot connect to PostgreSQL at %s (%s): %s; check the database setting (--database, RIPCORD_DATABASE) and that PostgreSQL runs there and accepts connections",
				connectAddrs(cfg), redact(rawURL), connectReason(err))
		case errors.As(err, &connectErr):
			msg = fmt.Sprintf("database: connect to %s: no answer within %s (connect_timeout; set connect_timeout=SECONDS in the URL to wait longer): %s",
				redact(rawURL), cfg.ConnectTimeout, connectReason(err))
		default:
			msg = fmt.Sprintf("database: connect to %s: no answer within %s: %s", redact(rawURL), pingTimeout, connectReason(err))
		}
		return nil, &connectFailure{msg: msg, err: err}
	}
	return &DB{Dialect: Postgres, Write: db, Read: db, Source: redact(rawURL)}, nil
}

// connectTimeoutZero reports whether the connect_timeout of 0 pgx found
// was set, by the URL or by PGCONNECT_TIMEOUT (pgx ignores it empty), rather
// than none being set. A service file's 0 is not seen: it gets the default.
func connectTimeoutZero(rawURL string) bool {
	if os.Getenv("PGCONNECT_TIMEOUT") != "" {
		return true
	}
	u, err := url.Parse(rawURL)
	return err == nil && u.Query().Has("connect_timeout")
}

// timedOut reports whether err is a deadline passing rather than an answer.
func timedOut(err error) bool {
	var netErr net.Error
	return pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.Write.PingContext(ctx); err != nil {
		return err
	}
	if db.Read != db.Write {
		return db.Read.PingContext(ctx)
	}
	return nil
}

// CheckWrite reports whether the database can be written now. On SQLite a
// ping or a read says nothing about it (they work on a full disk or a file
// that became read-only), and neither does a write that is rolled back or
// BEGIN IMMEDIATE: SQLite keeps a transaction's pages in memory until its
// commit, so those never touch the file. So it commits a write that changes
// nothing: user_version set to itself, one page appended to the WAL, which
// the checkpointer copies back and reuses (the database does not grow).
//
// On PostgreSQL it asks whether a session takes writes: a standby (what a
// failover leaves behind an address still pointing at the old primary)
// or default_transaction_read_only answers pings and reads, and refuses
// every write. The answer is ErrReadOnly. Then it checks that the
// database's disk has room (checkPostgresSpace).
func (db *DB) CheckWrite(ctx context.Context) error {
	if db.Dialect != SQLite {
		var standby bool
		var readOnly string
		if err := db.Write.QueryRowContext(ctx, `SELECT pg_is_in_recovery(), current_setting('transaction_read_only')`).Scan(&standby, &readOnly); err != nil {
			return err
		}
		switch {
		case standby:
			return fmt.Errorf("%w: PostgreSQL is a standby (in recovery)", ErrReadOnly)
		case readOnly == "on":
			return fmt.Errorf("%w: PostgreSQL sessions are read-only (default_transaction_read_only)", ErrReadOnly)
		}
		return db.checkPostgresSpace(ctx)
	}
	return db.InTx(ctx, func(tx *sql.Tx) error {
		var v int64
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v))
		return err
	})
}

// ErrReadOnly is CheckWrite's answer for a PostgreSQL that takes no
// writes; Unavailable counts it.
var ErrReadOnly = errors.New("the database is read-only: it takes no writes")

// spaceProbe sorts more rows than work_mem (64 kB, set with it) holds, so
// PostgreSQL writes them to a temporary file of about 70 kB, in the
// database's own tablespace (temp_tablespaces emptied): where its tables
// grow. It takes about 3 ms, and the file is removed at once.
const spaceProbe = `SELECT count(*) FROM (SELECT g FROM generate_series(1, 5000) g ORDER BY g DESC OFFSET 0) s`

// checkPostgresSpace reports whether PostgreSQL can write a new block of
// the database. A full disk fails each write that needs one (SQLSTATE
// 53100: every new delivery, fact and job) while pings, reads and even
// updates that fit in their page go on; and no write can be committed
// to find out without leaving something behind (an insert's page stays
// and the next one fits in it). A temporary file needs new blocks each
// time and leaves nothing: the answer is the disk-full error.
func (db *DB) checkPostgresSpace(ctx context.Context) error {
	tx, err := db.Write.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SET LOCAL work_mem = '64kB'`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `SET LOCAL temp_tablespaces = ''`); err != nil {
		return err
	}
	var n int64
	if err := tx.QueryRowContext(ctx, spaceProbe).Scan(&n); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == diskFull {
			return fmt.Errorf("PostgreSQL's disk is full: a temporary file of the database could not be written: %w", err)
		}
		return err
	}
	return nil
}

// Close closes the pools.
func (db *DB) Close() error {
	var err error
	if db.checkpointer != nil {
		err = db.checkpointer.stop()
	}
	err = errors.Join(err, db.Write.Close())
	if db.Read != db.Write {
		err = errors.Join(err, db.Read.Close())
	}
	if db.wal != nil {
		db.wal.close()
	}
	if db.serveLock != nil {
		err = errors.Join(err, db.serveLock.Close())
	}
	return err
}

// InTx runs fn in a write transaction and commits it when fn returns nil.
func (db *DB) InTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer rollbackOnPanic(tx)
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// InDurableTx is InTx for writes that must survive a power cut before the
// caller answers (acknowledged webhook deliveries and facts): on SQLite the
// commit fsyncs the WAL; PostgreSQL commits are durable anyway.
func (db *DB) InDurableTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if db.Dialect != SQLite {
		return db.InTx(ctx, fn)
	}
	conn, err := db.Write.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
		return fmt.Errorf("begin durable transaction: %w", err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = NORMAL`) }()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer rollbackOnPanic(tx)
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// rollbackOnPanic ends a transaction whose function panicked before the
// panic goes on: left open, it would hold SQLite's one writer connection
// and every later write would wait for it forever.
func rollbackOnPanic(tx *sql.Tx) {
	if p := recover(); p != nil {
		_ = tx.Rollback()
		panic(p)
	}
}

// keywordPassword is a password in a libpq keyword/value string.
var keywordPassword = regexp.MustCompile(`(?i)\b(ssl)?password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// redact removes the passwords from a URL for logs and errors: the one
// in its user info, and those libpq takes as parameters (password=,
// sslpassword=). A URL that does not parse is not shown at all, since where
// its password is cannot be told.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a database URL that does not parse)"
	}
	if u.Scheme == "" {
		// Not a URL: a libpq keyword/value string, refused, but named in
		// the refusal.
		return keywordPassword.ReplaceAllString(raw, "${1}password=xxxxx")
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	hidden := false
	for name := range q {
		if strings.EqualFold(name, "password") || strings.EqualFold(name, "sslpassword") {
			q[name] = []string{"xxxxx"}
			hidden = true
		}
	}
	if hidden {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func stdlibConfig(rawURL string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("database: %q is not a valid PostgreSQL URL: %w", redact(rawURL), err)
	}
	return cfg, nil
}
