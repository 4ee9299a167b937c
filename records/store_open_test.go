package records

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

func TestOpenReleaseTwiceIsIdempotentButDifferentContentConflicts(t *testing.T) {
	t.Parallel()
	base := record("R1", "", 0, func(r *Record) { r.PRURL, r.PRNumber = "https://github.com/acme/checkout/pull/7", 7 })
	conflicts := []struct {
		name  string
		field string
		edit  func(*Record)
	}{
		{"retried POST carries another image", "image", func(r *Record) { r.Image = imageOf("R9") }},
		{"same id sent for another cluster", "cluster", func(r *Record) { r.Cluster = "prod-us" }},
		{"same id re-sent as a rollback", "kind", rollbackOf("R0")},
		{"pull request number differs", "pr_number", func(r *Record) { r.PRNumber = 8 }},
		{"flow started at another time", "flow_started_at", func(r *Record) { r.FlowStartedAt = ptime(at(-1)) }},
	}
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		first := openRelease(t, s, base)
		// The release moved on; sending it again must neither fail nor reset it.
		applyFact(t, s, fact("R1", PhaseProgressing, 1), "", at(1))
		again, events := openAt(t, s, base, at(3))
		if again.State != StateProgressing || !again.CreatedAt.Equal(first.CreatedAt) || len(events) != 0 {
			t.Errorf("second open returned %s created %s with %d events; want the stored progressing record and no event",
				again.State, again.CreatedAt, len(events))
		}
		if n := count(t, s, `SELECT COUNT(*) FROM audit_events WHERE type = 'release_opened'`); n != 1 {
			t.Errorf("%d release_opened events, want 1", n)
		}
		for _, c := range conflicts {
			t.Run(c.name, func(t *testing.T) {
				r := base
				c.edit(&r)
				err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
					_, _, err := s.OpenRelease(context.Background(), tx, r, at(4))
					return err
				})
				var ce *ConflictError
				if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) || ce.Field != c.field {
					t.Fatalf("error %v, want a conflict naming %s", err, c.field)
				}
			})
		}
	})
}

func TestOpenReleaseRejectsInvalidInputNamingTheField(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
			_, _, err := s.OpenRelease(context.Background(), tx, record("R1", "", 0, func(r *Record) { r.Image = "" }), at(0))
			return err
		})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "image" {
			t.Fatalf("error %v, want a FieldError for image", err)
		}
		if n := count(t, s, `SELECT COUNT(*) FROM records`); n != 0 {
			t.Errorf("invalid release stored (%d rows)", n)
		}
	})
}

func openAt(t *testing.T, s *Store, r Record, now time.Time) (Record, []AuditEvent) {
	t.Helper()
	var rec Record
	var events []AuditEvent
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		rec, events, err = s.OpenRelease(context.Background(), tx, r, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec, events
}
