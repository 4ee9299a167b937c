package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

func TestListFiltersAndOrdersNewestFirst(t *testing.T) {
	t.Parallel()
	other := func(app, env string) func(*Record) {
		return func(r *Record) { r.App, r.Environment = app, env }
	}
	cases := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{"everything, newest first, release id breaking the tie", Filter{}, []string{"C1", "A3", "A2", "B1", "A1"}},
		{"one app across environments", Filter{App: "checkout"}, []string{"A3", "A2", "B1", "A1"}},
		{"one target", Filter{App: "checkout", Environment: "prod", Cluster: "prod-eu"}, []string{"A3", "A2", "A1"}},
		{"a cluster nobody deploys to", Filter{Cluster: "prod-us"}, nil},
		{"by state", Filter{State: StateHealthy}, []string{"C1", "A1"}},
		{"limit keeps the newest", Filter{Limit: 2}, []string{"C1", "A3"}},
	}
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		putRecord(t, s, record("A1", StateHealthy, 0, healthyAt(1)))
		putRecord(t, s, record("A2", StateProgressing, 10))
		putRecord(t, s, record("A3", StateOpened, 10))
		putRecord(t, s, record("B1", StateOpened, 5, other("checkout", "staging")))
		putRecord(t, s, record("C1", StateHealthy, 20, other("payments", "prod"), healthyAt(21)))
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				rs, err := s.List(context.Background(), c.filter)
				if err != nil {
					t.Fatal(err)
				}
				if got := ids(rs); !slices.Equal(got, c.want) {
					t.Errorf("List(%+v) = %v, want %v", c.filter, got, c.want)
				}
			})
		}
		var fe *FieldError
		if _, err := s.List(context.Background(), Filter{State: "done"}); !errors.As(err, &fe) || fe.Field != "state" {
			t.Errorf("unknown state: %v, want a FieldError for state", err)
		}
		rs, err := s.Newest(context.Background(), "checkout", "prod", "prod-eu", 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(rs); !slices.Equal(got, []string{"A3", "A2"}) {
			t.Errorf("Newest 2 = %v, want [A3 A2]", got)
		}
	})
}

func ids(rs []Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ReleaseID)
	}
	return out
}

func TestAuditFiltersAndTimelineOrder(t *testing.T) {
	t.Parallel()
	ev := func(typ AuditType, rel string, m int, delivery string) AuditEvent {
		return AuditEvent{Type: typ, ReleaseID: rel, At: at(m), DeliveryID: delivery, Message: string(typ) + " " + rel,
			Data: map[string]any{"workflow_run_id": int64(12345678901234)}}
	}
	events := []AuditEvent{
		ev(AuditFactReceived, "R1", 1, "d1"),
		ev(AuditStateChanged, "R1", 1, "d1"), // same microsecond: written order decides
		ev(AuditDriftDetected, "R2", 2, "d9"),
		ev(AuditStallDetected, "R1", 3, ""),
	}
	cases := []struct {
		name   string
		filter AuditFilter
		want   []string
	}{
		{"a release's story, newest first", AuditFilter{ReleaseID: "R1"}, []string{"stall_detected R1", "state_changed R1", "fact_received R1"}},
		{"a release's timeline, oldest first", AuditFilter{ReleaseID: "R1", Oldest: true}, []string{"fact_received R1", "state_changed R1", "stall_detected R1"}},
		{"every drift", AuditFilter{Type: AuditDriftDetected}, []string{"drift_detected R2"}},
		{"what one delivery caused", AuditFilter{DeliveryID: "d1", Oldest: true}, []string{"fact_received R1", "state_changed R1"}},
		{"limit keeps the newest", AuditFilter{Limit: 1}, []string{"stall_detected R1"}},
	}
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		if err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
			return s.InsertAudit(context.Background(), tx, events...)
		}); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				got, err := s.Audit(context.Background(), c.filter)
				if err != nil {
					t.Fatal(err)
				}
				var msgs []string
				for _, e := range got {
					msgs = append(msgs, e.Message)
				}
				if !slices.Equal(msgs, c.want) {
					t.Errorf("Audit(%+v) = %v, want %v", c.filter, msgs, c.want)
				}
			})
		}
		got, err := s.Audit(context.Background(), AuditFilter{Type: AuditDriftDetected})
		if err != nil || len(got) != 1 {
			t.Fatalf("drift events %v, %v", got, err)
		}
		if n, ok := got[0].Data["workflow_run_id"].(json.Number); !ok || n.String() != "12345678901234" {
			t.Errorf("data read back as %#v, want the run id exactly", got[0].Data["workflow_run_id"])
		}
		if !got[0].At.Equal(at(2)) || got[0].DeliveryID != "d9" {
			t.Errorf("event read back as %+v", got[0])
		}
	})
}

func TestInsertAuditRefusesAnUnknownType(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
			return s.InsertAudit(context.Background(), tx,
				AuditEvent{Type: AuditFactReceived, At: at(1)},
				AuditEvent{Type: "deploy_happened", At: at(1)})
		})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "type" {
			t.Fatalf("error %v, want a FieldError for type", err)
		}
		if n := count(t, s, `SELECT COUNT(*) FROM audit_events`); n != 0 {
			t.Errorf("%d events written from a refused batch", n)
		}
	})
}
