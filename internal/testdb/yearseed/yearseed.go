// Package yearseed fills a migrated database with about a year of a busy
// installation's history, for benchmarks and plan tests of the queries
// that list and read it: records, their audit events, webhook deliveries
// and rollouts. Only tests import it.
//
// The rows are written with plain SQL in one transaction, through prepared
// multi-row INSERTs: the stores' own write paths reduce facts and take
// locks, which would make a year take minutes to load. The history is
// deterministic (row i always gets the same values), so figures from two
// runs compare.
package yearseed

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Size is how much history Seed writes.
type Size struct {
	Repositories int // one app each
	Environments int
	Clusters     int // per environment
	Records      int
	AuditEvents  int // spread evenly over the records
	Deliveries   int
	Rollouts     int // at most one per record
}

// String names what size seeds, for the benchmarks' logs.
func (s Size) String() string {
	return fmt.Sprintf("%d releases, %d audit events, %d deliveries and %d rollouts", s.Records, s.AuditEvents, s.Deliveries, s.Rollouts)
}

// Year is a busy installation after a year: 100,000 releases across 50
// repositories and 10 environments, 1,000,000 audit events, 200,000
// deliveries and 20,000 rollouts.
var Year = Size{Repositories: 50, Environments: 10, Clusters: 2, Records: 100_000,
	AuditEvents: 1_000_000, Deliveries: 200_000, Rollouts: 20_000}

// Start is when the seeded history begins; it spans one year from there.
var Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Target is an app, environment and cluster releases run in.
type Target struct{ App, Environment, Cluster string }

// History is what Seed wrote, for benchmarks to ask about.
type History struct {
	Size    Size
	Targets []Target
	// RareEnvironment has a few releases only (one app's, in one cluster):
	// a filter on it finds few rows among many.
	RareEnvironment string
	// End is just after the newest row.
	End time.Time
}

// RareEnvironment's releases: every rareEvery-th record of one target.
const rareEvery = 1000

// Repository is the repository of app number a.
func Repository(a int) string { return fmt.Sprintf("acme/repo-%02d", a) }

// App is the app number a.
func App(a int) string { return fmt.Sprintf("app-%02d", a) }

// Environment is environment number e.
func Environment(e int) string { return fmt.Sprintf("env-%d", e) }

// ReleaseID is the release id of record i.
func ReleaseID(i int) string { return fmt.Sprintf("rel-%07d", i) }

// SkipUnlessNamed skips a benchmark of a year unless -bench names it:
// seeding a year takes minutes on a loaded machine, and `make bench` runs
// every benchmark 2,000 times (-bench . -benchtime 2000x), which would
// make the records sweep alone, at a second a round, take over half an
// hour.
func SkipUnlessNamed(b *testing.B, name string) {
	b.Helper()
	if testing.Short() {
		b.Skip("loads a year of history")
	}
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), name) {
		b.Skipf("loads a year of history: run it by name, -bench %s", name)
	}
}

// Each runs benchmark name (only when -bench names it, see
// SkipUnlessNamed) once per engine, on a migrated database seeded with
// size's history, and logs how long the seeding took.
func Each(b *testing.B, name string, size Size, fn func(b *testing.B, db *store.DB, h History)) {
	b.Helper()
	SkipUnlessNamed(b, name)
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			db := testdb.OpenMigrated(b, testdb.URL(b, engine))
			start := time.Now()
			h := Seed(b, db, size)
			b.Logf("%s: seeded %s in %s", engine, size, time.Since(start).Round(time.Millisecond))
			fn(b, db, h)
		})
	}
}

// Measure returns a function that runs fn as b's sub-benchmark name and
// reports the rows its last call read.
func Measure(b *testing.B) func(name string, fn func() (int, error)) {
	return func(name string, fn func() (int, error)) {
		b.Run(name, func(b *testing.B) {
			var n int
			for b.Loop() {
				var err error
				if n, err = fn(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "rows")
		})
	}
}

// Seed writes size's history into db, which must be migrated and empty.
func Seed(tb testing.TB, db *store.DB, size Size) History {
	tb.Helper()
	ctx := context.Background()
	h := History{Size: size, RareEnvironment: "canary"}
	for a := range size.Repositories {
		for e := range size.Environments {
			for c := range size.Clusters {
				h.Targets = append(h.Targets, Target{App(a), Environment(e), fmt.Sprintf("cluster-%d", c)})
			}
		}
	}
	step := 365 * 24 * time.Hour / time.Duration(max(size.Records, 1))
	h.End = Start.Add(time.Duration(size.Records+1) * step)
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit it does nothing
	if db.Dialect == store.SQLite {
		// A million audit events go into four indexes each, at places
		// all over them: with SQLite's default 2 MB cache every insert
		// would read its pages back from the file. The writer's one
		// connection gets its default again once the year is in.
		if _, err := tx.ExecContext(ctx, `PRAGMA cache_size = -262144`); err != nil {
			tb.Fatal(err)
		}
		defer func() { _, _ = db.Write.ExecContext(ctx, `PRAGMA cache_size = -2000`) }()
	}
	s := &seeder{ctx: ctx, tx: tx, dialect: db.Dialect, h: &h, step: step}
	for _, fill := range []struct {
		name string
		fn   func() error
	}{{"records", s.records}, {"audit events", s.audit}, {"deliveries", s.deliveries}, {"rollouts", s.rollouts}} {
		began := time.Now()
		if err := fill.fn(); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("seeded %s in %s", fill.name, time.Since(began).Round(time.Millisecond))
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	// What a server that has run for a year knows of its tables: without
	// it PostgreSQL plans these tables as if they were small.
	if db.Dialect == store.Postgres {
		if _, err := db.Write.ExecContext(ctx, `ANALYZE`); err != nil {
			tb.Fatal(err)
		}
	}
	return h
}

type seeder struct {
	ctx     context.Context
	tx      *sql.Tx
	dialect store.Dialect
	h       *History
	step    time.Duration
}

// target is the target of record i: round-robin, so every target's
// history interleaves with the others' as it does in real life. Every
// rareEvery-th record of target 0 goes to the rare environment instead.
func (s *seeder) target(i int) Target {
	t := s.h.Targets[i%len(s.h.Targets)]
	if i%len(s.h.Targets) == 0 && (i/len(s.h.Targets))%rareEvery == rareEvery-1 {
		t.Environment = s.h.RareEnvironment
	}
	return t
}

func (s *seeder) created(i int) time.Time { return Start.Add(time.Duration(i+1) * s.step) }

func micros(t time.Time) int64 { return store.Micros(t) }

// records: each target's newest record healthy (or, for every tenth
// target, opened and not yet run, after a healthy one), some failed and
// rolled back, the rest superseded.
func (s *seeder) records() error {
	size := s.h.Size
	perTarget := (size.Records + len(s.h.Targets) - 1) / len(s.h.Targets)
	ins, err := s.inserter("records", `release_id, app, environment, cluster, repository, kind, image, digest, state,
		healthy_at, last_fact_at, created_at, updated_at`)
	if err != nil {
		return err
	}
	for i := range size.Records {
		t := s.target(i)
		ti, n := i%len(s.h.Targets), i/len(s.h.Targets)
		last := n == perTarget-1 || i+len(s.h.Targets) >= size.Records
		created := s.created(i)
		state := "superseded"
		switch {
		case last && ti%10 == 0:
			state = "opened"
		case last || (ti%10 == 0 && i+2*len(s.h.Targets) >= size.Records):
			state = "healthy"
		case i%37 == 0:
			state = "failed"
		case i%53 == 0:
			state = "rolled-back"
		}
		var healthy, lastFact any
		if state != "opened" {
			lastFact = micros(created.Add(2 * time.Minute))
		}
		if state == "healthy" || state == "superseded" {
			healthy = micros(created.Add(5 * time.Minute))
		}
		digest := fmt.Sprintf("sha256:%064x", i)
		var repo int
		fmt.Sscanf(t.App, "app-%d", &repo)
		if err := ins.add(ReleaseID(i), t.App, t.Environment, t.Cluster, Repository(repo), "promote",
			"ghcr.io/acme/"+t.App+"@"+digest, digest, state, healthy, lastFact,
			micros(created), micros(created.Add(10*time.Minute))); err != nil {
			return err
		}
	}
	return ins.flush()
}

// auditTypes is one release's story, repeated as far as its share of the
// events goes.
var auditTypes = []string{"release_opened", "fact_received", "state_changed", "health_check_started",
	"gate_evaluated", "fact_received", "health_check_passed", "state_changed", "deployment_received", "state_saved"}

func (s *seeder) audit() error {
	size := s.h.Size
	if size.Records == 0 {
		return nil
	}
	ins, err := s.inserter("audit_events", `type, release_id, delivery_id, fact_id, at, message, data`)
	if err != nil {
		return err
	}
	for j := range size.AuditEvents {
		// Written in time order, as the store writes them: record i's
		// k-th event shortly after it was created.
		i, k := j*size.Records/size.AuditEvents, j%len(auditTypes)
		at := s.created(i).Add(time.Duration(k) * 20 * time.Second)
		delivery := ""
		if k%3 == 1 {
			delivery = fmt.Sprintf("dlv-%07d", j%max(size.Deliveries, 1))
		}
		var data any
		if k == 4 {
			data = `{"gate":"error-rate","verdict":"pass"}`
		}
		if err := ins.add(auditTypes[k], ReleaseID(i), delivery, "", micros(at), "seeded "+auditTypes[k], data); err != nil {
			return err
		}
	}
	return ins.flush()
}

// deliveries: processed, some ignored, a few failed; a handful still
// queued after a failed attempt (waiting for their retry).
func (s *seeder) deliveries() error {
	size := s.h.Size
	cols := `id, event, action, installation_id, repository, received_at, state, attempts, processed_at, processed_count`
	if s.dialect == store.Postgres {
		cols += `, body`
	} else {
		cols = `seq, ` + cols
	}
	ins, err := s.inserter("deliveries", cols)
	if err != nil {
		return err
	}
	var bodies *inserter
	if s.dialect == store.SQLite {
		if bodies, err = s.inserter("delivery_bodies", `seq, body`); err != nil {
			return err
		}
	}
	events := []string{"workflow_run", "check_run", "pull_request", "deployment_status", "check_suite"}
	step := 365 * 24 * time.Hour / time.Duration(max(size.Deliveries, 1))
	body := []byte(`{"action":"completed"}`)
	for i := range size.Deliveries {
		at := Start.Add(time.Duration(i+1) * step)
		state, attempts, processed := "processed", 1, any(micros(at.Add(time.Second)))
		switch {
		case i%5000 == 4999:
			state, processed = "queued", nil
		case i%97 == 0:
			state = "failed"
		case i%23 == 0:
			state = "ignored"
		}
		args := []any{fmt.Sprintf("dlv-%07d", i), events[i%len(events)], "completed", 1,
			Repository(i % max(size.Repositories, 1)), micros(at), state, attempts, processed, 1}
		if s.dialect == store.Postgres {
			args = append(args, body)
		} else {
			args = append([]any{i + 1}, args...)
			if err := bodies.add(i+1, body); err != nil {
				return err
			}
		}
		if err := ins.add(args...); err != nil {
			return err
		}
	}
	if bodies != nil {
		if err := bodies.flush(); err != nil {
			return err
		}
	}
	return ins.flush()
}

// rollouts: one for every few records, each with its batches and audit
// trail; the newest of each target still running.
func (s *seeder) rollouts() error {
	size := s.h.Size
	if size.Rollouts == 0 || size.Records == 0 {
		return nil
	}
	ros, err := s.inserter("rollouts", `id, release_id, repository, installation_id, app, environment, version,
		snapshot, machine, status, phase, created_at, updated_at`)
	if err != nil {
		return err
	}
	batches, err := s.inserter("rollout_batches", `rollout_id, kind, stage, pass, batch, name, ord, run_id, state,
		dispatched_at, updated_at`)
	if err != nil {
		return err
	}
	audit, err := s.inserter("rollout_audit", `rollout_id, n, at, type, message`)
	if err != nil {
		return err
	}
	every := max(size.Records/size.Rollouts, 1)
	for r := range min(size.Rollouts, size.Records) {
		i := r * every
		t := s.target(i)
		var repo int
		fmt.Sscanf(t.App, "app-%d", &repo)
		id := fmt.Sprintf("ro-%06d", r)
		created := s.created(i)
		status, phase := "succeeded", "done"
		if i+every*len(s.h.Targets) >= size.Records {
			status, phase = "running", "deploy"
		}
		machine := `{"status":"` + status + `","phase":"` + phase + `"}`
		if err := ros.add(id, ReleaseID(i), Repository(repo), 1, t.App, t.Environment, fmt.Sprintf("v%d", i),
			`{}`, machine, status, phase, micros(created), micros(created.Add(time.Hour))); err != nil {
			return err
		}
	}
	if err := ros.flush(); err != nil {
		return err
	}
	// The batches and audit lines after their rollouts: they reference them.
	for r := range min(size.Rollouts, size.Records) {
		i := r * every
		id := fmt.Sprintf("ro-%06d", r)
		created := s.created(i)
		for b := range 3 {
			at := micros(created.Add(time.Duration(b) * 10 * time.Minute))
			if err := batches.add(id, "deploy", b, 0, 0, fmt.Sprintf("stage %d", b), b+1, int64(r*3+b+1), "success", at, at); err != nil {
				return err
			}
		}
		for n, typ := range []string{"start", "dispatch", "dispatch", "dispatch"} {
			if err := audit.add(id, n+1, micros(created.Add(time.Duration(n)*time.Minute)), typ, "seeded "+typ); err != nil {
				return err
			}
		}
	}
	for _, in := range []*inserter{batches, audit} {
		if err := in.flush(); err != nil {
			return err
		}
	}
	return nil
}

// inserter writes rows of one table through a prepared INSERT of several
// rows at once; the last few go through a statement of their own.
type inserter struct {
	s       *seeder
	table   string
	cols    string
	ncols   int
	perStmt int
	full    *sql.Stmt
	pending []any
}

// rowsPerInsert: the SQLite driver binds $N parameters in time quadratic
// in their number and an in-process database saves no round trip, so
// SQLite gets small statements (as records' BenchmarkNewest1M found).
var rowsPerInsert = map[store.Dialect]int{store.SQLite: 8, store.Postgres: 500}

func (s *seeder) inserter(table, cols string) (*inserter, error) {
	in := &inserter{s: s, table: table, cols: cols, ncols: len(strings.Split(cols, ",")), perStmt: rowsPerInsert[s.dialect]}
	st, err := s.tx.PrepareContext(s.ctx, in.statement(in.perStmt))
	if err != nil {
		return nil, fmt.Errorf("seed %s: %w", table, err)
	}
	in.full = st
	return in, nil
}

func (in *inserter) statement(rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + in.table + " (" + in.cols + ") VALUES ")
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for c := range in.ncols {
			if c > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "$%d", r*in.ncols+c+1)
		}
		b.WriteString(")")
	}
	return b.String()
}

func (in *inserter) add(row ...any) error {
	if len(row) != in.ncols {
		return fmt.Errorf("seed %s: %d values for %d columns", in.table, len(row), in.ncols)
	}
	in.pending = append(in.pending, row...)
	if len(in.pending) < in.perStmt*in.ncols {
		return nil
	}
	_, err := in.full.ExecContext(in.s.ctx, in.pending...)
	in.pending = in.pending[:0]
	if err != nil {
		return fmt.Errorf("seed %s: %w", in.table, err)
	}
	return nil
}

func (in *inserter) flush() error {
	defer in.full.Close()
	if len(in.pending) == 0 {
		return nil
	}
	_, err := in.s.tx.ExecContext(in.s.ctx, in.statement(len(in.pending)/in.ncols), in.pending...)
	in.pending = in.pending[:0]
	if err != nil {
		return fmt.Errorf("seed %s: %w", in.table, err)
	}
	return nil
}
