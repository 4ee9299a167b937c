package records

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// BenchmarkApplyFact measures facts applied per second, each in its own
// durable transaction as the fact intake commits them, and repeats
// (duplicates) per second. Against it, the same loop measures a floor: one
// raw single-row INSERT of a fact-sized body per durable transaction,
// interleaved with the facts so that both see the same machine load. The
// x-floor ratio says how much of the floor the reducer and its reads cost.
// ns/op counts both halves; the rates count each alone.
func BenchmarkApplyFact(b *testing.B) {
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			s, db := openStore(b, testdb.URL(b, engine))
			openRelease(b, s, record("R1", "", 0))
			fl := newFloor(b, db)
			b.Run("applied", func(b *testing.B) {
				var applying time.Duration
				i := 0
				for b.Loop() {
					fl.insert(b)
					// A new generation each time: a restart of the release
					// already there, so each fact is applied, moving it
					// between progressing and healthy.
					phase := PhaseProgressing
					if i%2 == 1 {
						phase = PhaseHealthy
					}
					observed := at(1).Add(time.Duration(i) * time.Second)
					f := fact("R1", phase, 1, gen(int64(i+2)), func(f *Fact) { f.ObservedAt = observed })
					began := time.Now()
					if res := applyDurably(b, s, f, observed); res.Outcome != OutcomeApplied {
						b.Fatalf("fact %d: %s (%s)", i, res.Outcome, res.Reason)
					}
					applying += time.Since(began)
					i++
				}
				fl.report(b, "facts/s", applying)
			})
			b.Run("duplicate", func(b *testing.B) {
				var applying time.Duration
				f := fact("R1", PhaseProgressing, 1, gen(2))
				for b.Loop() {
					fl.insert(b)
					began := time.Now()
					if res := applyDurably(b, s, f, at(2)); res.Outcome != OutcomeDuplicate {
						b.Fatalf("repeat: %s (%s)", res.Outcome, res.Reason)
					}
					applying += time.Since(began)
				}
				fl.report(b, "duplicates/s", applying)
			})
		})
	}
}

func applyDurably(b *testing.B, s *Store, f Fact, now time.Time) Result {
	var res Result
	err := s.db.InDurableTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		res, err = s.ApplyFact(context.Background(), tx, f, "bench", now)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// floor times raw single-row INSERTs, each in its own durable transaction,
// into a scratch table.
type floor struct {
	db    *store.DB
	body  string
	n     int
	spent time.Duration
}

func newFloor(b *testing.B, db *store.DB) *floor {
	if _, err := db.Write.Exec(`CREATE TABLE bench_floor (id BIGINT PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	return &floor{db: db, body: strings.Repeat("x", 600)} // about a fact's JSON
}

func (fl *floor) insert(b *testing.B) {
	ctx := context.Background()
	began := time.Now()
	err := fl.db.InDurableTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO bench_floor (id, body) VALUES ($1, $2)`, fl.n, fl.body)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	fl.n++
	fl.spent += time.Since(began)
}

// report gives the rate of b.N operations that took spent, the floor's
// rate over the same iterations, and their ratio; the floor restarts.
func (fl *floor) report(b *testing.B, unit string, spent time.Duration) {
	rate := float64(b.N) / spent.Seconds()
	floorRate := float64(b.N) / fl.spent.Seconds()
	b.ReportMetric(rate, unit)
	b.ReportMetric(floorRate, "floor-inserts/s")
	b.ReportMetric(rate/floorRate, "x-floor")
	b.ReportMetric(0, "ns/op") // both halves: misleading beside the rates
	fl.spent = 0
}
