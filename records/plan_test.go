package records_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/sqlplan"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// The reads behind the list pages, the eligibility API, the gates and the
// sweep must not walk a whole table as the history grows: each must
// search an index for its rows, and a page must read them in the order it
// lists them rather than sort them all for a LIMIT (PERFORMANCE.md,
// session 18). SQLite plans without statistics (ripcord never runs
// ANALYZE), so the plan of an empty database is the plan of a year's.
func TestHotReadsSearchAnIndex(t *testing.T) {
	t.Parallel()
	db := testdb.OpenMigrated(t, testdb.URL(t, "sqlite"))
	plans := sqlplan.Reads(t, db)
	s := records.NewStore(db)
	ctx := context.Background()
	targets := []records.Target{{App: "shop", Environment: "prod", Cluster: "eu"}, {App: "shop", Environment: "prod", Cluster: "us"}}
	for _, c := range []struct {
		name string
		read func() error
		// want is in the plan of every statement the read runs; an
		// ordered walk of a whole index (SCAN … USING INDEX) is allowed
		// only where want names it.
		want string
		// sorts allows sorting what want's search finds: a bounded part
		// of the table, for a read of one row.
		sorts bool
	}{
		{"the newest releases", func() error { _, err := s.List(ctx, records.Filter{Limit: 50}); return err },
			"SCAN records USING INDEX records_created", false},
		{"an app's releases", func() error { _, err := s.List(ctx, records.Filter{App: "shop"}); return err },
			"SEARCH records USING INDEX records_app (app=?)", false},
		{"an environment's releases", func() error { _, err := s.List(ctx, records.Filter{Environment: "prod"}); return err },
			"SEARCH records USING INDEX records_environment (environment=?)", false},
		{"a cluster's releases", func() error { _, err := s.List(ctx, records.Filter{Cluster: "eu"}); return err },
			"SEARCH records USING INDEX records_cluster (cluster=?)", false},
		{"a cluster's failed releases", func() error {
			_, err := s.List(ctx, records.Filter{Cluster: "eu", State: records.StateFailed})
			return err
		}, "SEARCH records USING INDEX records_cluster (cluster=?)", false},
		{"an app's releases in one environment", func() error {
			_, err := s.List(ctx, records.Filter{App: "shop", Environment: "prod"})
			return err
		}, "SEARCH records USING INDEX records_app (app=?)", false},
		{"an app's failed releases", func() error {
			_, err := s.List(ctx, records.Filter{App: "shop", State: records.StateFailed})
			return err
		}, "SEARCH records USING INDEX", false},
		{"a target's releases", func() error {
			_, err := s.List(ctx, records.Filter{App: "shop", Environment: "prod", Cluster: "eu"})
			return err
		}, "SEARCH records USING INDEX records_target (app=? AND environment=? AND cluster=?)", false},
		{"the newest releases that ran of several targets", func() error { _, err := s.NewestRan(ctx, 15, targets); return err },
			"SEARCH records USING INDEX records_target (app=? AND environment=? AND cluster=?)", false},
		{"the repository that owns an app's environment", func() error { _, err := s.Owner(ctx, "shop", "prod"); return err },
			"SEARCH records USING INDEX records_target (app=? AND environment=?)", true},
		{"a release's timeline", func() error {
			_, err := s.Audit(ctx, records.AuditFilter{ReleaseID: "r1", Oldest: true, Limit: 1000})
			return err
		}, "SEARCH audit_events USING INDEX audit_events_release (release_id=?)", false},
		{"a release's events of one type", func() error {
			_, err := s.Audit(ctx, records.AuditFilter{ReleaseID: "r1", Type: records.AuditGateEvaluated})
			return err
		}, "SEARCH audit_events USING INDEX audit_events_release (release_id=?)", false},
		{"a delivery's events of one type", func() error {
			_, err := s.Audit(ctx, records.AuditFilter{DeliveryID: "d1", Type: records.AuditFactReceived})
			return err
		}, "SEARCH audit_events USING INDEX audit_events_delivery (delivery_id=?)", false},
		{"the events of one type", func() error {
			_, err := s.Audit(ctx, records.AuditFilter{Type: records.AuditDriftDetected})
			return err
		}, "SEARCH audit_events USING INDEX audit_events_type (type=?)", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			plans.Reset()
			if err := c.read(); err != nil {
				t.Fatal(err)
			}
			got := plans.Taken()
			if len(got) == 0 {
				t.Fatal("the read ran no query")
			}
			for _, p := range got {
				if !strings.Contains(p.Plan, c.want) {
					t.Errorf("plan of %s\n%s\nhas no %q", p.OneLine(), p.Plan, c.want)
				}
				for _, line := range strings.Split(p.Plan, "\n") {
					scan := strings.Contains(line, "SCAN records") || strings.Contains(line, "SCAN audit_events")
					if (scan && !strings.Contains(c.want, strings.TrimSpace(line))) || (!c.sorts && strings.Contains(line, "TEMP B-TREE FOR ORDER BY")) {
						t.Errorf("plan of %s\n%s\nhas %q: it reads the whole table, or sorts all its matches", p.OneLine(), p.Plan, strings.TrimSpace(line))
					}
				}
			}
		})
	}
}

// The hourly sweep ranks only the targets with more records than it keeps
// (records.Store.Sweep): it counts each target's records from
// records_target alone, searches the records of a crowded target by its
// target, and reads the table once, in its order, for the records that
// never ran. Ranking every target read every record that ran along
// records_target, row by row, and looked up the others one by one from
// records_state. The rows its releases left behind in other tables are
// looked for in those tables' indexes of release_id, not in their rows
// (a rollout's are long).
func TestSweepReadsOnlyTheRecordsOfCrowdedTargets(t *testing.T) {
	t.Parallel()
	db := testdb.OpenMigrated(t, testdb.URL(t, "sqlite"))
	plans := sqlplan.Reads(t, db)
	s := records.NewStore(db)
	if _, err := s.Sweep(context.Background(), time.Now(), time.Hour, 100); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"SCAN records USING COVERING INDEX records_target":                            true,
		"SEARCH r USING INDEX records_target (app=? AND environment=? AND cluster=?)": true,
		"SCAN records": true,
	}
	ranked := 0
	looked := map[string]bool{} // tables whose left-behind rows were looked for in an index
	for _, p := range plans.Taken() {
		if !strings.Contains(p.Query, "ROW_NUMBER") {
			for _, line := range strings.Split(p.Plan, "\n") {
				line = strings.TrimSpace(line)
				if !strings.HasPrefix(line, "SCAN ") {
					continue
				}
				if strings.Contains(line, "USING COVERING INDEX") {
					looked[strings.Fields(line)[1]] = true
				} else {
					t.Errorf("plan of %s\n%s\nhas %q: it reads every row of the table", p.OneLine(), p.Plan, line)
				}
			}
			continue
		}
		ranked++
		seen := map[string]bool{}
		for _, line := range strings.Split(p.Plan, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "SCAN records") && !strings.HasPrefix(line, "SEARCH records") && !strings.HasPrefix(line, "SCAN r ") && !strings.HasPrefix(line, "SEARCH r ") {
				continue
			}
			seen[line] = true
			if !allowed[line] {
				t.Errorf("plan of %s\n%s\nhas %q", p.OneLine(), p.Plan, line)
			}
		}
		for line := range allowed {
			if !seen[line] {
				t.Errorf("plan of %s\n%s\nhas no %q", p.OneLine(), p.Plan, line)
			}
		}
	}
	if ranked != 1 {
		t.Errorf("the sweep ranked records in %d statements, want 1", ranked)
	}
	for _, table := range []string{"release_check_notes", "rollback_reopened", "rollouts"} {
		if !looked[table] {
			t.Errorf("the sweep did not look for the rows left behind in %s through its index of release_id (looked in %v)", table, looked)
		}
	}
}
