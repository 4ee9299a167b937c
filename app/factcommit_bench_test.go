package app

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// ingestWorkers is the concurrency of BenchmarkFactIngest: requesters for
// the facts, and the same number of inserters for the floor.
const ingestWorkers = 32

// BenchmarkFactIngest measures facts per second committed durably by the
// fact intake's group commit (commitFacts, what POST /api/v1/facts runs
// after decoding) under 32 concurrent requesters, one fact per request,
// and repeats (duplicates) per second. Against it, in the same run and at
// the same concurrency, a floor: 32 goroutines each doing one raw
// single-row INSERT of a fact-sized body per durable transaction. Floor and
// facts alternate in rounds so that both see the same machine load.
//
// Each requester reports one workload of its own; the 32 workloads are
// spread over 8 clusters, so on PostgreSQL requests also wait on each
// other's cluster locks, as agents of one cluster do.
//
// "applied-agent-batches" posts facts as the cluster agent sends them when
// it has several spooled (cluster/deliver.go sends up to 100 a request): 8
// agents, one per cluster, each request a new generation of each of its
// cluster's agentWorkloads workloads. Its floor is the same single-row
// inserts, so its ratio says what one fact costs when it arrives in a batch.
func BenchmarkFactIngest(b *testing.B) {
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			srv, err := New(context.Background(), testConfig(testdb.MigratedURL(b, engine)), Options{Logger: discardLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.close()
			defer srv.writer.Close()
			now := time.Now().UTC().Truncate(time.Second)
			for w := range ingestWorkers {
				openBenchRelease(b, srv, w, now)
			}
			fl := newIngestFloor(b, srv.db)
			gens := make([]int64, ingestWorkers)
			b.Run("applied", func(b *testing.B) {
				factsTook, floorTook := alternate(b, fl, func(w int) error {
					gens[w]++
					phase := records.PhaseProgressing
					if gens[w]%2 == 0 {
						phase = records.PhaseHealthy
					}
					f := benchFact(w, gens[w], phase, now.Add(time.Duration(gens[w])*time.Millisecond))
					return postBenchFact(srv, f, "applied")
				})
				reportIngest(b, "facts/s", factsTook, floorTook)
			})
			b.Run("duplicate", func(b *testing.B) {
				factsTook, floorTook := alternate(b, fl, func(w int) error {
					f := benchFact(w, 1, records.PhaseProgressing, now.Add(time.Millisecond))
					return postBenchFact(srv, f, "duplicate")
				})
				reportIngest(b, "duplicates/s", factsTook, floorTook)
			})
			for c := range agentClusters {
				for i := range agentWorkloads {
					openBenchRelease(b, srv, agentWorkload(c, i), now)
				}
			}
			agentGens := make([]int64, agentClusters*agentWorkloads)
			b.Run("applied-agent-batches", func(b *testing.B) {
				var factsTook, floorTook time.Duration
				const round = agentClusters * agentWorkloads * 4
				for done := 0; done < b.N; done += round {
					n := min(round, b.N-done)
					floorTook += concurrently(b, n, fl.insert)
					factsTook += agentRequests(b, srv, n, agentGens, now)
				}
				reportIngest(b, "facts/s", factsTook, floorTook)
			})
		})
	}
}

const (
	// agentClusters agents post at once, one per cluster.
	agentClusters = 8
	// agentWorkloads is how many workloads each agent reports in one request.
	agentWorkloads = 25
)

// agentWorkload numbers workload i of cluster c after the 32 of the
// single-fact requesters; its cluster is cluster-c (benchFact puts worker
// w in cluster-(w%8)).
func agentWorkload(c, i int) int {
	return ingestWorkers + i*agentClusters + c
}

// agentRequests has agentClusters agents post n facts in all, each request
// a batch of the next generation of each workload of its cluster (the last
// one cut short at n), and returns the time they took.
func agentRequests(b *testing.B, srv *Server, n int, gens []int64, now time.Time) time.Duration {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	began := time.Now()
	for c := range agentClusters {
		wg.Go(func() {
			for {
				k := min(int64(agentWorkloads), left.Add(-agentWorkloads)+agentWorkloads)
				if k <= 0 {
					return
				}
				batch := make([]records.Fact, 0, k)
				for i := range int(k) {
					w := agentWorkload(c, i)
					gens[w-ingestWorkers]++
					g := gens[w-ingestWorkers]
					phase := records.PhaseProgressing
					if g%2 == 0 {
						phase = records.PhaseHealthy
					}
					batch = append(batch, benchFact(w, g, phase, now.Add(time.Duration(g)*time.Millisecond)))
				}
				res, err := srv.commitFacts(batch, time.Now().UTC())
				if err != nil {
					b.Error(err)
					return
				}
				for i, r := range res {
					if r.Outcome != "applied" {
						b.Errorf("fact %s generation %d: %s (%s), want applied", batch[i].Name, batch[i].Generation, r.Outcome, r.Reason)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return time.Since(began)
}

func openBenchRelease(b testing.TB, srv *Server, w int, now time.Time) {
	r := records.Record{ReleaseID: fmt.Sprintf("bench-%d", w), App: fmt.Sprintf("app-%d", w), Environment: "prod",
		Cluster: fmt.Sprintf("cluster-%d", w%8), Repository: "acme/checkout", Kind: records.KindPromote,
		Image: benchImage(w), CreatedAt: now}
	err := srv.db.InTx(context.Background(), func(tx *sql.Tx) error {
		_, _, err := srv.records.OpenRelease(context.Background(), tx, r, now)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

func benchImage(w int) string {
	return fmt.Sprintf("registry.example/shop/app-%d@sha256:%064d", w, w)
}

// benchFact is generation g of requester w's workload: a restart of its
// release, so each new generation is applied.
func benchFact(w int, g int64, phase records.Phase, observed time.Time) records.Fact {
	return records.Fact{Source: records.SourceRollout, Cluster: fmt.Sprintf("cluster-%d", w%8), Namespace: "shop",
		Name: fmt.Sprintf("app-%d", w), UID: fmt.Sprintf("uid-%d", w), Generation: g, ObservedGeneration: g,
		Phase: phase, StepCount: 3, PodHash: fmt.Sprintf("hash-%d", g), Images: []string{benchImage(w)},
		ReleaseID: fmt.Sprintf("bench-%d", w), ObservedAt: observed}
}

func postBenchFact(srv *Server, f records.Fact, want string) error {
	res, err := srv.commitFacts([]records.Fact{f}, time.Now().UTC())
	if err != nil {
		return err
	}
	if res[0].Outcome != want {
		return fmt.Errorf("fact %s generation %d: %s (%s), want %s", f.Name, f.Generation, res[0].Outcome, res[0].Reason, want)
	}
	return nil
}

// ingestFloor does raw single-row INSERTs, each in its own durable
// transaction, into a scratch table.
type ingestFloor struct {
	db   *store.DB
	body string
	next atomic.Int64
}

func newIngestFloor(b *testing.B, db *store.DB) *ingestFloor {
	if _, err := db.Write.Exec(`CREATE TABLE bench_floor (id BIGINT PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	return &ingestFloor{db: db, body: strings.Repeat("x", 600)} // about a fact's JSON
}

func (fl *ingestFloor) insert(int) error {
	ctx := context.Background()
	return fl.db.InDurableTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO bench_floor (id, body) VALUES ($1, $2)`, fl.next.Add(1), fl.body)
		return err
	})
}

// alternate runs b.N floor inserts and b.N facts, in rounds of a few per
// worker, each half by ingestWorkers goroutines, and returns the time
// each half took.
func alternate(b *testing.B, fl *ingestFloor, fact func(worker int) error) (facts, floor time.Duration) {
	const round = ingestWorkers * 8
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		floor += concurrently(b, n, fl.insert)
		facts += concurrently(b, n, fact)
	}
	return facts, floor
}

// concurrently runs op n times over ingestWorkers goroutines; worker w
// runs its ops one after the other.
func concurrently(b *testing.B, n int, op func(worker int) error) time.Duration {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	began := time.Now()
	for w := range ingestWorkers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := op(w); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(began)
}

func reportIngest(b *testing.B, unit string, facts, floor time.Duration) {
	rate := float64(b.N) / facts.Seconds()
	floorRate := float64(b.N) / floor.Seconds()
	b.ReportMetric(rate, unit)
	b.ReportMetric(floorRate, "floor-inserts/s")
	b.ReportMetric(rate/floorRate, "x-floor")
	b.ReportMetric(0, "ns/op") // both halves: misleading beside the rates
}
