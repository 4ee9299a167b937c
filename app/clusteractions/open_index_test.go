package clusteractions

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/sqlplan"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// Every query of a cluster's open actions (a poll's look for work, its
// claim and the expiry in it, the sweep's look for clusters to expire)
// reads them through cluster_actions_open on SQLite, as it does on
// PostgreSQL: walked through the (cluster, action_key) index instead, each
// poll of every agent reads all of its cluster's actions ever queued. The
// plans are those of the statements the store really sends, with their
// arguments, for each kind of agent that polls.
func TestOpenActionsAreReadThroughTheirPartialIndexOnSQLite(t *testing.T) {
	t.Parallel()
	db := testdb.OpenMigrated(t, testdb.MigratedURL(t, "sqlite"))
	plans := sqlplan.All(t, db)
	ctx := context.Background()
	now := time.Now().UTC()
	// Past the claim grace, so that a claim's expiry reads the stale
	// claims too.
	s := &actionStore{db: db, records: records.NewStore(db), log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		started: now.Add(-time.Hour)}
	// Some history: a done action, one claimed and one pending.
	rolledBack := actionapi.Result{Agent: "agent-old", Status: actionapi.StatusDone, Outcome: actionapi.OutcomeRolledBack}
	for i, agent := range []string{"agent-old", "agent-a", ""} {
		id := enqueueRollback(t, db, fmt.Sprintf("v%d", i+2), fmt.Sprintf("c%d", i+2), "")
		if agent == "" {
			break
		}
		if got, err := s.claim(ctx, "prod-eu", agent, "", false, now); err != nil || len(got) != 1 {
			t.Fatalf("claim by %s: %v %v", agent, got, err)
		}
		if agent != "agent-old" {
			continue
		}
		if _, outcome, why, err := s.finish(ctx, "prod-eu", id, rolledBack, now); err != nil || outcome != finishRecorded {
			t.Fatalf("finish %s: %v %s %v", id, outcome, why, err)
		}
	}

	for _, poll := range []struct {
		namespace string
		resume    bool
	}{{"", false}, {"", true}, {"shop", false}, {"shop", true}} {
		name := fmt.Sprintf("namespace %q, resume %v", poll.namespace, poll.resume)
		plans.Reset()
		if _, err := s.hasWork(ctx, "prod-eu", "agent-a", poll.namespace, poll.resume, now); err != nil {
			t.Fatal(err)
		}
		checkOpenPlans(t, "hasWork, "+name, plans.Taken(), 1)
		// The expiry's two reads, the agent's own claims when resuming,
		// and the pending actions.
		plans.Reset()
		if _, err := s.claim(ctx, "prod-eu", "agent-a", poll.namespace, poll.resume, now); err != nil {
			t.Fatal(err)
		}
		want := 3
		if poll.resume {
			want = 4
		}
		checkOpenPlans(t, "claim, "+name, plans.Taken(), want)
	}
	plans.Reset()
	if _, err := s.dueClusters(ctx, now); err != nil {
		t.Fatal(err)
	}
	checkOpenPlans(t, "dueClusters", plans.Taken(), 1)
}

// checkOpenPlans fails the test unless want distinct queries of
// cluster_actions were planned, each reading cluster_actions_open and no
// other index or walk of the table.
func checkOpenPlans(t *testing.T, what string, taken []sqlplan.Query, want int) {
	t.Helper()
	seen := map[string]bool{}
	for _, p := range taken {
		if !strings.Contains(p.Query, "FROM cluster_actions") {
			continue
		}
		seen[p.Query] = true
		if !strings.Contains(p.Plan, "INDEX cluster_actions_open") || strings.Contains(p.Plan, "sqlite_autoindex_cluster_actions") ||
			strings.Contains(p.Plan, "SCAN cluster_actions\n") || strings.HasSuffix(p.Plan, "SCAN cluster_actions") {
			t.Errorf("%s: the plan of\n%s\nis\n%s\nwant it to read cluster_actions_open", what, p.Query, p.Plan)
		}
	}
	if len(seen) != want {
		t.Errorf("%s: %d queries of cluster_actions planned, want %d", what, len(seen), want)
	}
}
