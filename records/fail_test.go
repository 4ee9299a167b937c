package records

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// FailUnrun ends only a release that never got a fact; one the facts moved
// on, or that ended already, is theirs.
func TestFailUnrunEndsOnlyAnOpenedReleaseWithoutFacts(t *testing.T) {
	t.Parallel()
	why := "rollback action act_1 in cluster prod-eu ended skipped: checkout runs v3"
	for _, tc := range []struct {
		name string
		rec  Record
		ok   bool
	}{
		{"opened, no fact", record("R1", StateOpened, 1), true},
		{"progressing", record("R1", StateProgressing, 1, lastFact(2)), false},
		{"healthy", record("R1", StateHealthy, 1, lastFact(2), healthyAt(2)), false},
		{"withdrawn", record("R1", StateAborted, 1), false},
		{"failed before it ran already", record("R1", StateFailed, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, evs, ok := FailUnrun(tc.rec, why, map[string]any{"action_id": "act_1"}, at(5))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				if got.State != tc.rec.State || evs != nil {
					t.Errorf("changed %s to %s with %v", tc.rec.State, got.State, evs)
				}
				return
			}
			if got.State != StateFailed || !got.UpdatedAt.Equal(at(5)) || got.LastFactAt != nil {
				t.Errorf("got %s updated %s last fact %v, want failed at %s with no fact", got.State, got.UpdatedAt, got.LastFactAt, at(5))
			}
			if err := Transition(tc.rec.State, got.State); err != nil {
				t.Errorf("not a transition of the state machine: %v", err)
			}
			if len(evs) != 2 || evs[0].Type != AuditStateChanged || evs[1].Type != AuditFailureDetected {
				t.Fatalf("events %+v, want state_changed then failure_detected", evs)
			}
			for _, ev := range evs {
				if !strings.Contains(ev.Message, why) || ev.Data["action_id"] != "act_1" || ev.ReleaseID != "R1" {
					t.Errorf("event %+v does not carry the reason and the action", ev)
				}
			}
			if evs[0].Data["from"] != "opened" || evs[0].Data["to"] != "failed" {
				t.Errorf("state_changed data %v", evs[0].Data)
			}
		})
	}
}

// FailUnrunRelease stores the failed record and its events once, and a
// release failed so raises no stall alert: it is settled, not waiting.
func TestFailUnrunReleaseStoresTheEndOnceAndNoStallFollows(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		ctx := context.Background()
		openRelease(t, s, record("F1", StateOpened, 1, rollbackOf("A0")))
		openRelease(t, s, record("O2", StateOpened, 2))
		var got Record
		if err := s.db.InTx(ctx, func(tx *sql.Tx) error {
			var ok bool
			var err error
			got, ok, err = s.FailUnrunRelease(ctx, tx, "F1", "rollback action act_1 ended skipped", map[string]any{"action_id": "act_1"}, at(3))
			if err == nil && !ok {
				t.Error("F1 was not failed")
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		stored := mustGet(t, s, "F1")
		sameRecord(t, stored, got)
		if stored.State != StateFailed || stored.LastFactAt != nil {
			t.Errorf("F1 stored %s, last fact %v; want failed with no fact", stored.State, stored.LastFactAt)
		}
		var again bool
		if err := s.db.InTx(ctx, func(tx *sql.Tx) error {
			var err error
			_, again, err = s.FailUnrunRelease(ctx, tx, "F1", "once more", nil, at(4))
			return err
		}); err != nil || again {
			t.Errorf("failing F1 again: %v %v, want nothing done", again, err)
		}
		if n := count(t, s, `SELECT COUNT(*) FROM audit_events WHERE release_id = 'F1' AND type IN ('state_changed', 'failure_detected')`); n != 2 {
			t.Errorf("%d state_changed and failure_detected events of F1, want 2", n)
		}
		if err := s.db.InTx(ctx, func(tx *sql.Tx) error {
			_, _, err := s.FailUnrunRelease(ctx, tx, "nope", "why", nil, at(4))
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("failing an unknown release: %v, want ErrNotFound", err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}

		later := at(2).Add(time.Hour)
		cands, err := s.StallCandidates(ctx, later, StallCandidate{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range cands {
			ids = append(ids, c.ReleaseID)
		}
		if !slices.Equal(ids, []string{"O2"}) {
			t.Errorf("stall candidates %v, want only the opened O2", ids)
		}
		for rel, want := range map[string]bool{"F1": false, "O2": true} {
			var stalled bool
			if err := s.db.InTx(ctx, func(tx *sql.Tx) error {
				var err error
				_, _, stalled, err = s.MarkStalled(ctx, tx, rel, later, DefaultStallAfter)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if stalled != want {
				t.Errorf("%s stalled %v, want %v", rel, stalled, want)
			}
		}
	})
}

// A release failed before it ran got no fact: it did not run (it takes no
// place in an eligibility window and is not the release running there),
// and it was not withdrawn either.
func TestFailedUnrunDidNotRun(t *testing.T) {
	t.Parallel()
	rec, _, ok := FailUnrun(record("R1", StateOpened, 0), "the agent failed before its patch", nil, at(1))
	if !ok || rec.Ran() || rec.Withdrawn() {
		t.Errorf("failed unrun: ok %v, Ran %v, Withdrawn %v; want ok, neither ran nor withdrawn", ok, rec.Ran(), rec.Withdrawn())
	}
	if r := record("R2", StateFailed, 0, lastFact(1)); !r.Ran() {
		t.Error("a release a fact failed did not run")
	}
}
