package records

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// markStalled runs MarkStalled in its own transaction.
func markStalled(t *testing.T, s *Store, rel string, now time.Time) (AuditEvent, Effect, bool, error) {
	t.Helper()
	var ev AuditEvent
	var eff Effect
	var ok bool
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		ev, eff, ok, err = s.MarkStalled(context.Background(), tx, rel, now, 15*time.Minute)
		return err
	})
	return ev, eff, ok, err
}

func TestMarkStalledAlertsOncePerRecord(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		openRelease(t, s, record("R2", "", 0))
		applyFact(t, s, fact("R2", PhaseProgressing, 1, func(f *Fact) { f.Name = "other" }), "", at(1))

		steps := []struct {
			name string
			rel  string
			m    int
			want bool
		}{
			{"before stall_after nothing is wrong yet", "R1", 10, false},
			{"no fact for stall_after: alert", "R1", 20, true},
			{"the job runs again: no second alert", "R1", 30, false},
			{"a release that got a fact never stalls", "R2", 60, false},
		}
		for _, st := range steps {
			ev, eff, ok, err := markStalled(t, s, st.rel, at(st.m))
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if ok != st.want {
				t.Fatalf("%s: stalled %v, want %v", st.name, ok, st.want)
			}
			if ok && (ev.Type != AuditStallDetected || eff.Type != AlertStall || eff.Key != "alert/stall/R1") {
				t.Errorf("%s: event %+v, effect %+v", st.name, ev, eff)
			}
		}
		evs, err := s.Audit(context.Background(), AuditFilter{Type: AuditStallDetected})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].ReleaseID != "R1" || !evs[0].At.Equal(at(20)) {
			t.Errorf("stall events %+v, want one for R1 at minute 20", evs)
		}
		if _, _, _, err := markStalled(t, s, "gone", at(20)); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown release: %v, want ErrNotFound", err)
		}
	})
}

func TestStallCandidatesAreTheUnalertedReleasesWithNoFact(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("waited", "", 0))
		openRelease(t, s, record("alerted", "", 0))
		openRelease(t, s, record("has-a-fact", "", 0))
		openRelease(t, s, record("young", "", 10))
		putRecord(t, s, record("closed", StateSuperseded, 0))
		applyFact(t, s, fact("has-a-fact", PhaseProgressing, 1), "", at(1))
		if _, _, ok, err := markStalled(t, s, "alerted", at(16)); err != nil || !ok {
			t.Fatalf("mark alerted: %v %v", ok, err)
		}
		ids := func(cs []StallCandidate) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.ReleaseID)
			}
			return out
		}
		got, err := s.StallCandidates(context.Background(), at(5), StallCandidate{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"waited"}; !slices.Equal(ids(got), want) {
			t.Errorf("candidates opened by minute 5: %v, want %v", ids(got), want)
		}
		if len(got) == 1 && (got[0].Repository != "acme/checkout" || !got[0].CreatedAt.Equal(at(0))) {
			t.Errorf("candidate %+v, want acme/checkout's release opened at minute 0", got[0])
		}
		got, err = s.StallCandidates(context.Background(), at(20), StallCandidate{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"waited", "young"}; !slices.Equal(ids(got), want) {
			t.Errorf("candidates %v, want %v", ids(got), want)
		}
	})
}

// A scan pages past releases whose own stall_after has not passed yet, so
// a long one cannot hide the releases opened after it.
func TestStallCandidatesPage(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		for _, id := range []string{"b", "a", "c"} {
			openRelease(t, s, record(id, "", 0))
		}
		openRelease(t, s, record("d", "", 1))
		var got []string
		var after StallCandidate
		for range 10 {
			page, err := s.StallCandidates(context.Background(), at(20), after, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range page {
				got = append(got, c.ReleaseID)
			}
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1]
		}
		if want := []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
			t.Errorf("pages gave %v, want %v", got, want)
		}
	})
}
