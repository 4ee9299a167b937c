package clusteractions

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
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
	db := testdb.OpenMigrated(t, testdb.URL(t, "sqlite"))
	plans := planStatements(t, db)
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
		plans.reset()
		if _, err := s.hasWork(ctx, "prod-eu", "agent-a", poll.namespace, poll.resume, now); err != nil {
			t.Fatal(err)
		}
		checkOpenPlans(t, "hasWork, "+name, plans.taken(), 1)
		// The expiry's two reads, the agent's own claims when resuming,
		// and the pending actions.
		plans.reset()
		if _, err := s.claim(ctx, "prod-eu", "agent-a", poll.namespace, poll.resume, now); err != nil {
			t.Fatal(err)
		}
		want := 3
		if poll.resume {
			want = 4
		}
		checkOpenPlans(t, "claim, "+name, plans.taken(), want)
	}
	plans.reset()
	if _, err := s.dueClusters(ctx, now); err != nil {
		t.Fatal(err)
	}
	checkOpenPlans(t, "dueClusters", plans.taken(), 1)
}

// checkOpenPlans fails the test unless want distinct queries of
// cluster_actions were planned, each reading cluster_actions_open and no
// other index or walk of the table.
func checkOpenPlans(t *testing.T, what string, taken []plannedQuery, want int) {
	t.Helper()
	seen := map[string]bool{}
	for _, p := range taken {
		if !strings.Contains(p.query, "FROM cluster_actions") {
			continue
		}
		seen[p.query] = true
		if !strings.Contains(p.plan, "INDEX cluster_actions_open") || strings.Contains(p.plan, "sqlite_autoindex_cluster_actions") ||
			strings.Contains(p.plan, "SCAN cluster_actions\n") || strings.HasSuffix(p.plan, "SCAN cluster_actions") {
			t.Errorf("%s: the plan of\n%s\nis\n%s\nwant it to read cluster_actions_open", what, p.query, p.plan)
		}
	}
	if len(seen) != want {
		t.Errorf("%s: %d queries of cluster_actions planned, want %d", what, len(seen), want)
	}
}

// plannedQuery is a query and SQLite's plan of it, one line a step.
type plannedQuery struct{ query, plan string }

// planLog keeps the plan of every query run through the database.
type planLog struct {
	mu    sync.Mutex
	plans []plannedQuery
}

func (l *planLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.plans = nil
}

func (l *planLog) taken() []plannedQuery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.plans
}

// planStatements puts pools in db, for writing (one connection, as the
// store has it) and reading, that ask SQLite for the plan of each query
// (EXPLAIN QUERY PLAN, with the query's own arguments, in its own
// transaction) before they run it, so that the test sees the statements
// the store really sends: claim and expiry read in write transactions.
// It must run before any statement is prepared on the pools it replaces.
func planStatements(t *testing.T, db *store.DB) *planLog {
	t.Helper()
	if db.Dialect != store.SQLite {
		t.Fatalf("planStatements plans SQLite's queries, not %s's", db.Dialect)
	}
	if n := db.CachedStatements(); n != 0 {
		t.Fatalf("%d statements are prepared on the pools planStatements replaces", n)
	}
	path, err := store.SQLitePath(db.Source)
	if err != nil {
		t.Fatal(err)
	}
	l := &planLog{}
	write := sql.OpenDB(planConnector{drv: db.Write.Driver(), log: l,
		dsn: "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_txlock=immediate"})
	write.SetMaxOpenConns(1)
	read := sql.OpenDB(planConnector{drv: db.Read.Driver(), log: l,
		dsn: "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=query_only(ON)"})
	oldWrite, oldRead := db.Write, db.Read
	db.Write, db.Read = write, read
	if err := errorsOf(oldWrite.Close(), oldRead.Close()); err != nil {
		t.Fatal(err)
	}
	return l
}

func errorsOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

type planConnector struct {
	drv driver.Driver
	dsn string
	log *planLog
}

// sqliteConn is what the SQLite driver's connection offers database/sql;
// planConn passes it all on, so that a pool of them behaves as the
// store's own.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
}

func (c planConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("the SQLite driver's connection (%T) lacks a method database/sql uses", conn)
	}
	return planConn{sqliteConn: sc, log: c.log}, nil
}

func (c planConnector) Driver() driver.Driver { return c.drv }

type planConn struct {
	sqliteConn
	log *planLog
}

func (c planConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.sqliteConn.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args)
	if err != nil {
		return nil, fmt.Errorf("plan of %s: %w", query, err)
	}
	var lines []string
	vals := make([]driver.Value, len(rows.Columns()))
	for rows.Next(vals) == nil {
		lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
	}
	rows.Close()
	c.log.mu.Lock()
	c.log.plans = append(c.log.plans, plannedQuery{query: query, plan: strings.Join(lines, "\n")})
	c.log.mu.Unlock()
	return c.sqliteConn.QueryContext(ctx, query, args)
}
