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
// (duplicates) per second. Against it, the same run measures a floor: one
// raw single-row INSERT of a fact-sized body per durable transaction. The
// ratio says how much of the floor the reducer and its reads cost.
func BenchmarkApplyFact(b *testing.B) {
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			s, db := openStore(b, testdb.URL(b, engine))
			openRelease(b, s, record("R1", "", 0))
			floor := floorInsertsPerSecond(b, db, 300)
			b.Run("applied", func(b *testing.B) {
				i := 0
				for b.Loop() {
					// A new generation each time: a restart of the release
					// already there, so each fact is applied, moving it
					// between progressing and healthy.
					phase := PhaseProgressing
					if i%2 == 1 {
						phase = PhaseHealthy
					}
					observed := at(1).Add(time.Duration(i) * time.Second)
					f := fact("R1", phase, 1, gen(int64(i+2)), func(f *Fact) { f.ObservedAt = observed })
					if res := applyDurably(b, s, f, observed); res.Outcome != OutcomeApplied {
						b.Fatalf("fact %d: %s (%s)", i, res.Outcome, res.Reason)
					}
					i++
				}
				reportRate(b, "facts/s", floor)
			})
			b.Run("duplicate", func(b *testing.B) {
				f := fact("R1", PhaseProgressing, 1, gen(2))
				for b.Loop() {
					if res := applyDurably(b, s, f, at(2)); res.Outcome != OutcomeDuplicate {
						b.Fatalf("repeat: %s (%s)", res.Outcome, res.Reason)
					}
				}
				reportRate(b, "duplicates/s", floor)
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

func reportRate(b *testing.B, unit string, floor float64) {
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, unit)
	b.ReportMetric(floor, "floor-inserts/s")
	b.ReportMetric(rate/floor, "x-floor")
}

// floorInsertsPerSecond times n raw single-row INSERTs, each in its own
// durable transaction, into a scratch table.
func floorInsertsPerSecond(b *testing.B, db *store.DB, n int) float64 {
	ctx := context.Background()
	if _, err := db.Write.ExecContext(ctx, `CREATE TABLE bench_floor (id BIGINT PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("x", 600) // about a fact's JSON
	start := time.Now()
	for i := range n {
		err := db.InDurableTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO bench_floor (id, body) VALUES ($1, $2)`, i, body)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}
