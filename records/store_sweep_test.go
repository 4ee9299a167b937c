package records

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

func TestSweepKeepsTheNewestFivePerTargetAndDeletesOldSettledOnes(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	now := at(0).Add(200 * day)
	recent := func(r *Record) { r.UpdatedAt = now.Add(-day) }
	inUS := func(r *Record) { r.Cluster = "prod-us" }
	history := thatRan([]Record{
		// Newest five of checkout/prod/prod-eu: kept however old.
		record("A9", StateHealthy, 9, healthyAt(9)),
		record("A8", StateSuperseded, 8),
		record("A7", StateSuperseded, 7),
		record("A6", StateFailed, 6),
		record("A5", StateSuperseded, 5),
		// Past the window.
		record("A4", StateSuperseded, 4),               // old and settled: deleted
		record("A3", StateFailed, 3, recent),           // changed a day ago: kept
		record("A2", StateProgressing, 2),              // never settled: kept
		record("A1", StateSuperseded, 1, healthyAt(1)), // healthy once, but out of the window: deleted
		record("B2", StateSuperseded, 2, inUS),         // another cluster's own window
		record("B1", StateSuperseded, 1, inUS),
	})
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		for _, r := range history {
			putRecord(t, s, r)
		}
		for _, rel := range []string{"A4", "A9"} {
			if _, err := s.db.Write.Exec(`INSERT INTO facts (id, release_id, source, received_at, body) VALUES ($1, $2, 'rollout', 0, '{}')`,
				"fact-"+rel, rel); err != nil {
				t.Fatal(err)
			}
		}
		// Check run notes (app/rollbackflow) of a release swept, a release
		// kept, and a release swept before notes went with their releases.
		for _, rel := range []string{"A4", "A9", "swept-before"} {
			if _, err := s.db.Write.Exec(`INSERT INTO release_check_notes (release_id, note) VALUES ($1, 'opening the rollback')`, rel); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
			return s.InsertAudit(context.Background(), tx, AuditEvent{Type: AuditStateChanged, ReleaseID: "A4", At: at(4)})
		}); err != nil {
			t.Fatal(err)
		}

		n, left := sweep(t, s, now, 90*day)
		if want := []string{"A2", "A3", "A5", "A6", "A7", "A8", "A9", "B1", "B2"}; n != 2 || !slices.Equal(left, want) {
			t.Fatalf("swept %d, left %v; want 2 swept, left %v", n, left, want)
		}
		if got := count(t, s, `SELECT COUNT(*) FROM facts WHERE release_id = 'A4'`); got != 0 {
			t.Errorf("facts of the deleted A4 kept")
		}
		if got := count(t, s, `SELECT COUNT(*) FROM facts WHERE release_id = 'A9'`); got != 1 {
			t.Errorf("facts of the kept A9 deleted")
		}
		for rel, want := range map[string]int{"A4": 0, "A9": 1, "swept-before": 0} {
			if got := count(t, s, `SELECT COUNT(*) FROM release_check_notes WHERE release_id = '`+rel+`'`); got != want {
				t.Errorf("%d check run notes of %s after the sweep, want %d", got, rel, want)
			}
		}
		if got := count(t, s, `SELECT COUNT(*) FROM audit_events WHERE release_id = 'A4'`); got != 1 {
			t.Errorf("audit events of the deleted A4 deleted; they are history")
		}
		if again, err := s.Sweep(context.Background(), now, 90*day, 5); err != nil || again != 0 {
			t.Errorf("second sweep deleted %d (%v), want 0", again, err)
		}
	})
}

// Opened records (pull requests not merged, or closed unmerged) never ran:
// eligibility gives them no place in its window, so neither does Sweep.
// Otherwise two abandoned pull requests would let it delete a release that
// still makes its image eligible.
func TestSweepKeepsTheNewestFiveThatRanPastOpenedRecords(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	now := at(0).Add(200 * day)
	history := thatRan([]Record{
		record("O2", StateOpened, 12),
		record("O1", StateOpened, 11),
		record("A9", StateHealthy, 9, healthyAt(9)),
		record("A8", StateSuperseded, 8),
		record("A7", StateSuperseded, 7),
		record("A6", StateFailed, 6),
		record("A5", StateSuperseded, 5, healthyAt(5)), // fifth-newest that ran: eligible, kept
		record("A4", StateSuperseded, 4),               // past the window: deleted
	})
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		for _, r := range history {
			putRecord(t, s, r)
		}
		n, left := sweep(t, s, now, 90*day)
		if want := []string{"A5", "A6", "A7", "A8", "A9", "O1", "O2"}; n != 1 || !slices.Equal(left, want) {
			t.Fatalf("swept %d, left %v; want 1 swept, left %v", n, left, want)
		}
	})
}

// A release that never ran takes no place among the newest that are kept
// and, having nothing to keep it for, goes once it is past retention:
// one withdrawn (its pull request closed unmerged: aborted with no fact),
// one whose deployment failed before it changed the workload (FailUnrun),
// or one a newer release superseded before any fact came.
func TestSweepTakesReleasesThatNeverRanOutOfTheWindowAndDeletesThem(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	now := at(0).Add(200 * day)
	noFact := func(r *Record) { r.LastFactAt = nil }
	ran := []Record{
		record("A9", StateHealthy, 9, healthyAt(9), lastFact(9)),
		record("A8", StateSuperseded, 8, lastFact(8)),
		record("A7", StateSuperseded, 7, lastFact(7)),
		record("A6", StateFailed, 6, lastFact(6)),
		record("A5", StateSuperseded, 5, healthyAt(5), lastFact(5)), // fifth-newest that ran: kept
	}
	for _, c := range []struct {
		name         string
		newer, older []Record
		swept        []string
	}{
		{"withdrawn", []Record{record("W10", StateAborted, 10, noFact)},
			[]Record{
				record("A4", StateAborted, 4, lastFact(4)), // an abort the cluster reported, past the window
				record("W3", StateAborted, 3, noFact),
			}, []string{"W10", "A4", "W3"}},
		{"failed or superseded without a fact", []Record{
			record("F11", StateFailed, 11, noFact),
			record("S10", StateSuperseded, 10, noFact),
		}, []Record{
			record("A4", StateFailed, 4, lastFact(4)), // past the window
			record("F3", StateFailed, 3, noFact),
		}, []string{"F11", "S10", "A4", "F3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, dbURL string) {
				s, _ := openStore(t, dbURL)
				for _, r := range slices.Concat(c.newer, ran, c.older) {
					putRecord(t, s, r)
				}
				n, left := sweep(t, s, now, 90*day)
				if want := []string{"A5", "A6", "A7", "A8", "A9"}; n != len(c.swept) || !slices.Equal(left, want) {
					t.Fatalf("swept %d, left %v; want %d swept %v, left %v", n, left, len(c.swept), c.swept, want)
				}
			})
		})
	}
}

// thatRan gives every record of rs that is not opened a fact at its
// creation: they ran (Record.Ran), as the sweep tests' histories mean.
func thatRan(rs []Record) []Record {
	for i := range rs {
		if rs[i].State != StateOpened && rs[i].LastFactAt == nil {
			rs[i].LastFactAt = ptime(rs[i].CreatedAt)
		}
	}
	return rs
}

func TestSweepDeletesInBatchesAndCountsAll(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		total := sweepBatch + 7 // more than one batch
		for i := range total {
			putRecord(t, s, record(fmt.Sprintf("R%04d", i), StateSuperseded, i, lastFact(i)))
		}
		n, err := s.Sweep(context.Background(), at(0).Add(48*time.Hour), time.Hour, 5)
		if err != nil {
			t.Fatal(err)
		}
		if n != total-5 {
			t.Errorf("swept %d, want %d", n, total-5)
		}
		rs, _ := s.List(context.Background(), Filter{})
		if got, want := ids(rs), []string{"R0506", "R0505", "R0504", "R0503", "R0502"}; !slices.Equal(got, want) {
			t.Errorf("left %v, want the newest five %v", got, want)
		}
	})
}

func TestSweepRefusesNonsense(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		retention time.Duration
		keep      int
	}{{"no retention would delete everything settled", 0, 5}, {"negative keep", time.Hour, -1}} {
		// Checked before the database is touched.
		if _, err := (&Store{}).Sweep(context.Background(), at(0), c.retention, c.keep); err == nil {
			t.Errorf("%s: Sweep(retention %s, keep %d) accepted", c.name, c.retention, c.keep)
		}
	}
}

// sweep runs Sweep keeping the newest 5 and returns how many records it
// deleted and the ids left, sorted.
func sweep(t *testing.T, s *Store, now time.Time, retention time.Duration) (int, []string) {
	t.Helper()
	n, err := s.Sweep(context.Background(), now, retention, 5)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.List(context.Background(), Filter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	left := ids(rs)
	slices.Sort(left)
	return n, left
}

// A target with no more records than the sweep keeps is not ranked
// (sweepCandidates): its releases that ran stay however old, and one that
// never ran still goes once past retention.
func TestSweepDeletesWhatNeverRanInATargetWithFewRecords(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	now := at(0).Add(200 * day)
	inUS := func(r *Record) { r.Cluster = "prod-us" }
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		for _, r := range []Record{
			record("B3", StateAborted, 3, inUS),                 // withdrawn: never ran
			record("B2", StateSuperseded, 2, inUS, lastFact(2)), // ran: in the window
			record("B1", StateFailed, 1, inUS),                  // failed before running
		} {
			putRecord(t, s, r)
		}
		if n, left := sweep(t, s, now, 90*day); n != 2 || !slices.Equal(left, []string{"B2"}) {
			t.Fatalf("swept %d, left %v; want B1 and B3 swept, B2 left", n, left)
		}
	})
}
