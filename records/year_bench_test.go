package records_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb/yearseed"
	"github.com/ripcord/ripcord/records"
)

// BenchmarkYear seeds a year of history (yearseed.Year: 100,000 releases,
// 1,000,000 audit events) and measures every read of records and audit
// events behind the API, the web pages, the gates and the sweep, each as
// the caller makes it. It only runs when -bench names it
// (yearseed.SkipUnlessNamed): loading the year takes about 16 s of CPU on
// SQLite, and the sweep a second a round.
//
//	go test -run '^$' -bench Year -benchtime 20x -v ./records
func BenchmarkYear(b *testing.B) {
	yearseed.Each(b, "Year", yearseed.Year, func(b *testing.B, db *store.DB, h yearseed.History) {
		logYearPlans(b, db, h)
		benchYearQueries(b, context.Background(), records.NewStore(db), h)
	})
}

func benchYearQueries(b *testing.B, ctx context.Context, s *records.Store, h yearseed.History) {
	t := h.Targets[len(h.Targets)/3]
	app, env := t.App, t.Environment
	release := yearseed.ReleaseID(h.Size.Records / 2)
	window := eligibility.DefaultWindow + eligibility.ReadAhead
	run := yearseed.Measure(b)
	list := func(f records.Filter) func() (int, error) {
		return func() (int, error) {
			rs, err := s.List(ctx, f)
			return len(rs), err
		}
	}
	// GET /api/v1/releases and its filters (the CLI's releases list).
	run("api-releases", list(records.Filter{Limit: 50}))
	run("api-releases-app", list(records.Filter{App: app, Limit: 50}))
	run("api-releases-environment", list(records.Filter{Environment: env, Limit: 50}))
	run("api-releases-rare-environment", list(records.Filter{Environment: h.RareEnvironment, Limit: 50}))
	run("api-releases-cluster", list(records.Filter{Cluster: t.Cluster, Limit: 50}))
	run("api-releases-unknown-cluster", list(records.Filter{Cluster: "cluster-gone", Limit: 50}))
	run("api-releases-state", list(records.Filter{State: records.StateHealthy, Limit: 50}))
	run("api-releases-app-environment", list(records.Filter{App: app, Environment: env, Limit: 50}))
	run("api-releases-target", list(records.Filter{App: app, Environment: env, Cluster: t.Cluster, Limit: 50}))
	run("api-releases-app-state", list(records.Filter{App: app, State: records.StateFailed, Limit: 50}))
	run("api-releases-environment-state", list(records.Filter{Environment: env, State: records.StateHealthy, Limit: 50}))
	run("api-releases-limit-1000", list(records.Filter{Limit: 1000}))
	run("api-release", func() (int, error) {
		_, err := s.Get(ctx, release)
		return 1, err
	})
	// GET /api/v1/releases/{id}/audit and GET /api/v1/audit.
	run("api-release-audit", func() (int, error) {
		es, err := s.Audit(ctx, records.AuditFilter{ReleaseID: release, Limit: 50, Oldest: true})
		return len(es), err
	})
	run("api-audit", func() (int, error) {
		es, err := s.Audit(ctx, records.AuditFilter{Limit: 50})
		return len(es), err
	})
	run("api-audit-type", func() (int, error) {
		es, err := s.Audit(ctx, records.AuditFilter{Type: records.AuditGateEvaluated, Limit: 50})
		return len(es), err
	})
	run("api-audit-release-type", func() (int, error) {
		es, err := s.Audit(ctx, records.AuditFilter{ReleaseID: release, Type: records.AuditGateEvaluated, Limit: 50})
		return len(es), err
	})
	// GET /api/v1/eligibility: the owner's window, the target's newest
	// releases that ran, and for a "no" the app's other records.
	run("api-eligibility", func() (int, error) {
		if _, err := s.Owner(ctx, app, env); err != nil {
			return 0, err
		}
		rs, err := s.NewestRan(ctx, window, []records.Target{{App: app, Environment: env, Cluster: t.Cluster}})
		if err != nil {
			return 0, err
		}
		others, err := s.List(ctx, records.Filter{App: app})
		return len(rs) + len(others), err
	})
	// The web UI's releases page (GET /): the newest 500 records, then
	// the newest releases that ran of each of their targets.
	run("webui-releases", func() (int, error) {
		rs, err := s.List(ctx, records.Filter{Limit: 500})
		if err != nil {
			return 0, err
		}
		seen := map[records.Target]bool{}
		var targets []records.Target
		for _, r := range rs {
			t := records.Target{App: r.App, Environment: r.Environment, Cluster: r.Cluster}
			if !seen[t] {
				seen[t] = true
				targets = append(targets, t)
			}
		}
		ran, err := s.NewestRan(ctx, eligibility.DefaultWindow, targets)
		return len(rs) + len(ran), err
	})
	// A release's page (GET /releases/{id}).
	run("webui-release", func() (int, error) {
		rec, err := s.Get(ctx, release)
		if err != nil {
			return 0, err
		}
		same, err := s.NewestRan(ctx, window, []records.Target{{App: rec.App, Environment: rec.Environment, Cluster: rec.Cluster}})
		if err != nil {
			return 0, err
		}
		app, err := s.List(ctx, records.Filter{App: rec.App})
		if err != nil {
			return 0, err
		}
		es, err := s.Audit(ctx, records.AuditFilter{ReleaseID: release, Limit: 1000, Oldest: true})
		return len(same) + len(app) + len(es), err
	})
	// The gates' subject (app/gatesflow/subject.go), read for every gate
	// check run.
	run("gates-subject", func() (int, error) {
		tg := []records.Target{{App: app, Environment: env, Cluster: t.Cluster}}
		ran, err := s.NewestRan(ctx, window, tg)
		if err != nil {
			return 0, err
		}
		newest, err := s.Newest(ctx, app, env, t.Cluster, window)
		if err != nil {
			return 0, err
		}
		if _, err := s.Owner(ctx, app, env); err != nil {
			return 0, err
		}
		elsewhere, err := s.List(ctx, records.Filter{App: app})
		return len(ran) + len(newest) + len(elsewhere), err
	})
	// The hourly records sweep as the server runs it (app/effects.go: the
	// default retention of 14 days, and the newest 100 of each target
	// kept): the year's targets hold 100 records each, so it ranks them
	// all and deletes none, and every round measures the same work.
	run("sweep", func() (int, error) {
		return s.Sweep(ctx, h.End, 14*24*time.Hour, 100)
	})
}

// logYearPlans prints the plan of each statement BenchmarkYear measures
// (go test -v): EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL, which
// plans with the statistics of the seeded year.
func logYearPlans(b *testing.B, db *store.DB, h yearseed.History) {
	t := h.Targets[len(h.Targets)/3]
	release := yearseed.ReleaseID(h.Size.Records / 2)
	type stmt struct {
		name  string
		query string
		args  []any
	}
	list := func(name string, f records.Filter) stmt {
		q, args := records.ListQuery(f, db.Dialect)
		return stmt{name, q, args}
	}
	audit := func(name string, f records.AuditFilter) stmt {
		q, args := records.AuditQuery(f, db.Dialect)
		return stmt{name, q, args}
	}
	// The sweep as BenchmarkYear's "sweep" runs it.
	sweepQ, sweepArgs := records.SweepQuery(store.Micros(h.End.Add(-14*24*time.Hour)), 100, records.SettledStates())
	stmts := []stmt{
		list("releases", records.Filter{Limit: 50}),
		list("releases?app=", records.Filter{App: t.App, Limit: 50}),
		list("releases?environment=", records.Filter{Environment: t.Environment, Limit: 50}),
		list("releases?environment=(rare)", records.Filter{Environment: h.RareEnvironment, Limit: 50}),
		list("releases?cluster=", records.Filter{Cluster: t.Cluster, Limit: 50}),
		list("releases?cluster=(unknown)", records.Filter{Cluster: "cluster-gone", Limit: 50}),
		list("releases?state=", records.Filter{State: records.StateHealthy, Limit: 50}),
		list("releases?app=&environment=", records.Filter{App: t.App, Environment: t.Environment, Limit: 50}),
		list("releases?app=&state=", records.Filter{App: t.App, State: records.StateFailed, Limit: 50}),
		audit("audit of a release", records.AuditFilter{ReleaseID: release, Limit: 1000, Oldest: true}),
		audit("audit?release_id=&type=", records.AuditFilter{ReleaseID: release, Type: records.AuditGateEvaluated, Limit: 50}),
		audit("audit?type=", records.AuditFilter{Type: records.AuditGateEvaluated, Limit: 50}),
		{"owner", records.OwnerQuery(db.Dialect), []any{t.App, t.Environment}},
		{"records sweep", sweepQ, sweepArgs},
		{"newest ran, one target (SQLite)", records.NewestRanOneSQL, []any{t.App, t.Environment, t.Cluster, 15}},
	}
	if db.Dialect == store.Postgres {
		stmts = append(stmts, stmt{"newest ran, two targets (PostgreSQL)", records.NewestRanLateralSQL,
			[]any{15, []string{t.App, h.Targets[0].App}, []string{t.Environment, h.Targets[0].Environment},
				[]string{t.Cluster, h.Targets[0].Cluster}}})
	}
	for _, s := range stmts {
		explain := "EXPLAIN QUERY PLAN "
		if db.Dialect == store.Postgres {
			explain = "EXPLAIN "
		}
		rows, err := db.Read.Query(explain+s.query, s.args...)
		if err != nil {
			b.Fatalf("plan of %s: %v", s.name, err)
		}
		cols, _ := rows.Columns()
		var lines []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				b.Fatal(err)
			}
			lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
		}
		rows.Close()
		b.Logf("plan of %s:\n\t%s", s.name, strings.Join(lines, "\n\t"))
	}
}
