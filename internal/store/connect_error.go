package store

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// connectFailure is a failed first connection: its message is one line
// (connectReason), and pgx's error stays underneath for errors.As.
type connectFailure struct {
	msg string
	err error
}

func (e *connectFailure) Error() string { return e.msg }
func (e *connectFailure) Unwrap() error { return e.err }

// connectReason is pgx's reason for a failed start on one line: pgx writes
// one line per attempt (each address, with and without TLS under the
// default sslmode=prefer), the same reason repeated, which a log or a
// terminal shows as several lines around the one that says what to do.
// Each attempt's reason is kept once, without the address pgx puts in
// front of it (connectAddrs names the addresses).
func connectReason(err error) string {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || ce.Unwrap() == nil {
		return oneLine(err.Error())
	}
	attempts := []error{ce.Unwrap()}
	if joined, ok := ce.Unwrap().(interface{ Unwrap() []error }); ok {
		attempts = joined.Unwrap()
	}
	var reasons []string
	for _, a := range attempts {
		r := a.Error()
		if inner := errors.Unwrap(a); inner != nil {
			r = inner.Error()
		}
		r = oneLine(r)
		if !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	return strings.Join(reasons, "; ")
}

// connectAddrs is every host:port pgx tries, in its order, each once.
func connectAddrs(cfg *pgx.ConnConfig) string {
	addrs := []string{hostPort(cfg.Host, cfg.Port)}
	for _, f := range cfg.Fallbacks {
		if a := hostPort(f.Host, f.Port); !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return strings.Join(addrs, ", ")
}

func hostPort(host string, port uint16) string {
	if strings.HasPrefix(host, "/") { // a Unix socket's folder
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
