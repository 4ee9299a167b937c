package records_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// Sizes of BenchmarkNewest1M's store.
const (
	benchRecords = 1_000_000
	benchApps    = 200
	// benchApps × environments × clusters = 2,000 targets of 500 records.
	benchRowsPerTx = 50_000
)

// benchRowsPerInsert is how many rows one INSERT carries. The SQLite driver
// binds $N parameters in time quadratic in their number, and an in-process
// database has no round trip to save, so SQLite gets small statements.
var benchRowsPerInsert = map[store.Dialect]int{store.SQLite: 4, store.Postgres: 1000}

var (
	benchEnvs     = []string{"prod", "staging"}
	benchClusters = []string{"eu", "us", "ap", "sa", "af"}
)

type benchTarget struct{ app, env, cluster string }

// BenchmarkNewest1M loads a million records spread over 2,000 app,
// environment and cluster targets, then measures what an eligibility
// question costs: Newest(…, 5) for a random target plus eligibility.Check.
// It reports p50 and p99 latency (the target is p99 ≤ 1 ms). Loading takes
// a while, so it only runs with -bench and never with -short.
func BenchmarkNewest1M(b *testing.B) {
	if testing.Short() {
		b.Skip("loads a million records")
	}
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			db, err := store.Open(ctx, testdb.URL(b, engine))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			targets := benchTargets()
			start := time.Now()
			fillRecords(b, db, targets)
			b.Logf("%s: loaded %d records in %s", engine, benchRecords, time.Since(start).Round(time.Millisecond))
			s := records.NewStore(db)
			rng := rand.New(rand.NewPCG(1, 2))
			// Steady state, as a running server is: statements prepared on
			// the read connections, and the loading's garbage collected.
			for range 100 {
				t := targets[rng.IntN(len(targets))]
				if _, err := s.Newest(ctx, t.app, t.env, t.cluster, eligibility.DefaultWindow); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			var lat []time.Duration
			for b.Loop() {
				t := targets[rng.IntN(len(targets))]
				// An image from the target's history: sometimes in the
				// window, mostly not, as real questions are.
				q := eligibility.Query{App: t.app, Environment: t.env, Cluster: t.cluster,
					Image: benchImage(t, rng.IntN(benchRecords/len(targets)))}
				began := time.Now()
				rs, err := s.Newest(ctx, t.app, t.env, t.cluster, eligibility.DefaultWindow)
				if err != nil {
					b.Fatal(err)
				}
				_ = eligibility.Check(rs, q, eligibility.DefaultWindow)
				lat = append(lat, time.Since(began))
				if len(rs) != eligibility.DefaultWindow {
					b.Fatalf("%v: %d records, want %d", t, len(rs), eligibility.DefaultWindow)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(micros(lat[len(lat)/2]), "p50-µs")
			b.ReportMetric(micros(lat[len(lat)*99/100]), "p99-µs")
		})
	}
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func benchTargets() []benchTarget {
	var out []benchTarget
	for a := range benchApps {
		for _, e := range benchEnvs {
			for _, c := range benchClusters {
				out = append(out, benchTarget{fmt.Sprintf("app-%03d", a), e, c})
			}
		}
	}
	return out
}

func benchImage(t benchTarget, n int) string {
	return fmt.Sprintf("ghcr.io/acme/%s@sha256:%064x", t.app, n)
}

// fillRecords inserts benchRecords records, round-robin over the targets so
// each target's history is interleaved with the others' as in real life:
// the newest healthy, every older one superseded with healthy_at kept.
func fillRecords(b *testing.B, db *store.DB, targets []benchTarget) {
	const cols = 11
	ctx := context.Background()
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	perTarget := benchRecords / len(targets)
	for txStart := 0; txStart < benchRecords; txStart += benchRowsPerTx {
		tx, err := db.Write.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		per := benchRowsPerInsert[db.Dialect]
		for at := txStart; at < txStart+benchRowsPerTx && at < benchRecords; at += per {
			var q strings.Builder
			q.WriteString(`INSERT INTO records (release_id, app, environment, cluster, kind, image, digest, state,
				healthy_at, created_at, updated_at) VALUES `)
			args := make([]any, 0, per*cols)
			for i := at; i < at+per && i < benchRecords; i++ {
				t, n := targets[i%len(targets)], i/len(targets)
				created := t0.Add(time.Duration(i) * time.Second)
				state := records.StateSuperseded
				if n == perTarget-1 {
					state = records.StateHealthy
				}
				image := benchImage(t, n)
				if len(args) > 0 {
					q.WriteString(", ")
				}
				fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d)",
					len(args)+1, len(args)+2, len(args)+3, len(args)+4, len(args)+5, len(args)+6,
					len(args)+7, len(args)+8, len(args)+9, len(args)+10, len(args)+11)
				args = append(args, fmt.Sprintf("%s:%s/%s#%d", t.app, t.cluster, t.env, n), t.app, t.env, t.cluster,
					string(records.KindPromote), image, records.ParseImage(image).Digest, string(state),
					store.Micros(created.Add(time.Minute)), store.Micros(created), store.Micros(created.Add(time.Hour)))
			}
			if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
				tx.Rollback()
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	// Statistics, as a database that grew to this size would have them.
	if _, err := db.Write.ExecContext(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}
