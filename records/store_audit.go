package records

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/internal/store"
)

// auditColumns are the columns InsertAudit writes, in auditArgs' order.
const (
	auditColumns = `type, release_id, delivery_id, fact_id, at, message, data`
	auditParams  = 7
	// auditBatch events go in one INSERT: a fact's events in one round
	// trip, and few enough parameters for the SQLite driver, which binds
	// $N parameters in time quadratic in their number.
	auditBatch = 50
)

// DefaultAuditLimit is how many events Audit returns when the filter says
// no limit.
const DefaultAuditLimit = 100

// AuditFilter selects audit events. Empty fields match everything.
type AuditFilter struct {
	ReleaseID  string
	Type       AuditType
	DeliveryID string
	// Limit is the most events returned; 0 means DefaultAuditLimit.
	Limit int
	// Oldest returns the oldest events first, for a release's timeline;
	// by default the newest come first.
	Oldest bool
}

// InsertAudit writes audit events in the caller's transaction. Events
// written by ApplyFact, OpenRelease and MarkStalled need no second call.
func (s *Store) InsertAudit(ctx context.Context, tx *sql.Tx, events ...AuditEvent) error {
	return s.insertAudit(ctx, tx, events)
}

func (s *Store) insertAudit(ctx context.Context, tx *sql.Tx, events []AuditEvent) error {
	for start := 0; start < len(events); start += auditBatch {
		batch := events[start:min(start+auditBatch, len(events))]
		var q strings.Builder
		q.WriteString(`INSERT INTO audit_events (` + auditColumns + `) VALUES `)
		args := make([]any, 0, len(batch)*auditParams)
		for i, e := range batch {
			a, err := auditArgs(e)
			if err != nil {
				return fmt.Errorf("audit event %d: %w", start+i, err)
			}
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(" + placeholders(len(args)+1, auditParams) + ")")
			args = append(args, a...)
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("insert audit events: %w", err)
		}
	}
	return nil
}

func auditArgs(e AuditEvent) ([]any, error) {
	if !e.Type.Valid() {
		return nil, &FieldError{Field: "type", Message: fmt.Sprintf("unknown audit type %q", e.Type)}
	}
	if e.At.IsZero() {
		return nil, &FieldError{Field: "at", Message: "is required"}
	}
	var data any // NULL when there is nothing to say
	if len(e.Data) > 0 {
		b, err := json.Marshal(e.Data)
		if err != nil {
			return nil, &FieldError{Field: "data", Message: err.Error()}
		}
		data = string(b)
	}
	return []any{string(e.Type), e.ReleaseID, e.DeliveryID, e.FactID, store.Micros(e.At), e.Message, data}, nil
}

// Audit returns the events the filter selects, newest first unless
// f.Oldest; events at the same microsecond keep the order they were
// written in.
func (s *Store) Audit(ctx context.Context, f AuditFilter) ([]AuditEvent, error) {
	if f.Type != "" && !f.Type.Valid() {
		return nil, &FieldError{Field: "type", Message: fmt.Sprintf("unknown audit type %q", f.Type)}
	}
	q, args := auditQuery(f, s.db.Dialect)
	rows, err := s.db.Read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read audit events: %w", err)
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, fmt.Errorf("read audit events: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read audit events: %w", err)
	}
	return out, nil
}

// auditQuery is Audit's statement. Each filter has an index in the order
// the events are read (audit_events_release, _delivery, _type), but the
// planner, given two, may walk the wrong one: a release's events of one
// type, read along audit_events_type, walked every event of that type
// until the release's turned up (PERFORMANCE.md, session 18). So only the
// narrowest filter given is an index's: a release has tens of events, a
// delivery a few, a type hundreds of thousands. The others are written
// as expressions (the column joined to an empty string), which no index
// serves, and are checked on the rows that one yields. That is for
// SQLite, which plans without statistics; PostgreSQL has them, and chose
// well.
func auditQuery(f AuditFilter, dialect store.Dialect) (string, []any) {
	var where []string
	var args []any
	indexed := false
	for _, c := range []struct{ col, v string }{
		{"release_id", f.ReleaseID}, {"delivery_id", f.DeliveryID}, {"type", string(f.Type)},
	} {
		if c.v == "" {
			continue
		}
		args = append(args, c.v)
		col := c.col
		if indexed && dialect == store.SQLite {
			col += " || ''"
		}
		indexed = true
		where = append(where, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	q := `SELECT ` + auditColumns + ` FROM audit_events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	if f.Oldest {
		q += ` ORDER BY at, id`
	} else {
		q += ` ORDER BY at DESC, id DESC`
	}
	args = append(args, limitOr(f.Limit, DefaultAuditLimit))
	q += fmt.Sprintf(` LIMIT $%d`, len(args))
	return q, args
}

func scanAudit(row scanner) (AuditEvent, error) {
	var e AuditEvent
	var typ string
	var at int64
	var data []byte
	if err := row.Scan(&typ, &e.ReleaseID, &e.DeliveryID, &e.FactID, &at, &e.Message, &data); err != nil {
		return e, err
	}
	e.Type, e.At = AuditType(typ), store.Time(at)
	if len(data) > 0 {
		// Numbers stay json.Number, so ids print back exactly as written.
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&e.Data); err != nil {
			return e, fmt.Errorf("data of a %s event: %w", typ, err)
		}
	}
	return e, nil
}

// limitOr is limit, or def when limit is not positive.
func limitOr(limit, def int) int {
	if limit <= 0 {
		return def
	}
	return limit
}
