package store

import (
	"database/sql/driver"
	"errors"
	"net"
	"regexp"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Unavailable reports whether err says the database cannot be used at all
// for now, rather than that one statement was wrong: PostgreSQL cannot be
// reached, closed the connection, is shutting down or starting, is out of
// disk or takes no writes (a standby, read-only sessions); SQLite's file
// cannot be written (disk full, I/O error, read-only, cannot be opened).
// The server answers such failures 503 and logs the outage once
// (app/dbhealth.go) instead of once per request or poll.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrReadOnly) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableCode(pgErr.Code)
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() & 0xff {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN:
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var opErr *net.OpError
	switch {
	case errors.As(err, &connectErr), errors.As(err, &opErr), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EFBIG), errors.Is(err, syscall.EIO),
		errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EDQUOT):
		return true
	}
	return UnavailableMessage(err.Error())
}

// diskFull is PostgreSQL's SQLSTATE for a write refused for lack of space.
const diskFull = "53100"

// unavailableCode reports whether a PostgreSQL SQLSTATE is the database
// being unavailable.
func unavailableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		code == "57P01", code == "57P02", code == "57P03", // shutdown, crash, starting
		strings.HasPrefix(code, "53"), // insufficient resources: disk full, too many connections
		strings.HasPrefix(code, "58"), // system error: I/O
		code == "25006":               // read_only_sql_transaction: a standby, default_transaction_read_only
		return true
	}
	return false
}

// unavailableTexts are what the drivers' errors say when the database is
// unavailable, for errors that reach us only as text (the job queue logs
// its errors as strings) or that pgx does not type ("conn closed"). They
// are compared without case: PostgreSQL's "No space left on device" is
// the system's text, capitalised.
var unavailableTexts = []string{
	"failed to connect to", "connection refused", "conn closed", "connection reset by peer", "broken pipe",
	"terminating connection due to administrator command", "the database system is shutting down",
	"the database system is starting up", "the database system is in recovery mode",
	"database or disk is full", "disk i/o error", "attempt to write a readonly database",
	"unable to open database file", "no space left on device", "file too large",
	"in a read-only transaction",
}

// sqlState finds the SQLSTATE in the text of a pgx error ("ERROR: ...
// (SQLSTATE 53100)"): it says what the message, which the server may
// write in another language, does not.
var sqlState = regexp.MustCompile(`\(SQLSTATE ([0-9A-Z]{5})\)`)

// UnavailableMessage is Unavailable for an error's text.
func UnavailableMessage(msg string) bool {
	for _, m := range sqlState.FindAllStringSubmatch(msg, -1) {
		if unavailableCode(m[1]) {
			return true
		}
	}
	msg = strings.ToLower(msg)
	for _, s := range unavailableTexts {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// RefusesWrites reports whether err is the database answering and
// refusing a write (a full disk, read-only), rather than not answering:
// then a read that works, or a ping, says nothing about its end.
func RefusesWrites(err error) bool {
	if errors.Is(err, ErrReadOnly) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == diskFull || pgErr.Code == "25006"
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() & 0xff {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY:
			return true
		}
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG) || errors.Is(err, syscall.EROFS) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"(sqlstate 53100)", "(sqlstate 25006)", "no space left on device", "database or disk is full",
		"in a read-only transaction", "attempt to write a readonly database", "file too large"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
