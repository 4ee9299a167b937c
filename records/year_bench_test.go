package records_test

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/internal/testdb/yearseed"
	"github.com/ripcord/ripcord/records"
)

// BenchmarkYear seeds a year of history (yearseed.Year: 100,000 releases,
// 1,000,000 audit events) and measures every read of records and audit
// events behind the API, the web pages, the gates and the sweep, each as
// the caller makes it. It only runs with -bench; loading the year takes
// about 20 s on SQLite.
//
//	go test -run '^$' -bench Year -benchtime 200x ./records
func BenchmarkYear(b *testing.B) {
	if testing.Short() {
		b.Skip("loads a year of history")
	}
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			db := testdb.OpenMigrated(b, testdb.URL(b, engine))
			start := time.Now()
			h := yearseed.Seed(b, db, yearseed.Year)
			b.Logf("%s: seeded a year in %s", engine, time.Since(start).Round(time.Millisecond))
			s := records.NewStore(db)
			benchYearQueries(b, ctx, s, h)
		})
	}
}

func benchYearQueries(b *testing.B, ctx context.Context, s *records.Store, h yearseed.History) {
	t := h.Targets[len(h.Targets)/3]
	app, env := t.App, t.Environment
	release := yearseed.ReleaseID(h.Size.Records / 2)
	window := eligibility.DefaultWindow + eligibility.ReadAhead
	run := func(name string, fn func() (int, error)) {
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
	// The records sweep, with a retention longer than the history: it
	// ranks every target's records and deletes none, so every round
	// measures the same work.
	run("sweep", func() (int, error) {
		return s.Sweep(ctx, h.End, 2*365*24*time.Hour, eligibility.DefaultWindow)
	})
}
