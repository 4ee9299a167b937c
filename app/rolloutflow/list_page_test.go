package rolloutflow

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The list of an environment's rollouts read each rollout's batches with
// a query of its own: a page of 100 rollouts was 102 queries. It reads
// them in one query for the page, and each rollout in it says what its
// own status says (without the audit trail, which the list leaves out).
func TestAPageOfTheListReadsItsRolloutsBatchesInOneQuery(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "stop", "", time.Minute)
		ctx := context.Background()
		// One rollout that ended, one with a batch in flight, one queued
		// behind it with none.
		h.start(nil)
		if r := h.run(nil); r.Machine.Status != Succeeded {
			t.Fatalf("the first rollout ended %s", r.Machine.Status)
		}
		ended := h.id
		snap := h.rollout().Snapshot
		var ids []string
		for _, rel := range []string{"r3:prod-eu/prod", "r4:prod-eu/prod"} {
			h.clock.set(h.clock.Now().Add(time.Second))
			h.open(rel, "v"+rel[1:2])
			rec, err := h.x.deps.Records.Get(ctx, rel)
			if err != nil {
				t.Fatal(err)
			}
			r, err := h.x.create(ctx, rec, githubtest.InstallationID, snap, "bob")
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
		h.id = ids[0]
		h.tick()
		inFlight, queued := ids[0], ids[1]

		want := map[string]string{}
		for _, id := range []string{ended, inFlight, queued} {
			st, err := h.x.Status(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			st.Audit = nil
			b, _ := json.Marshal(st)
			want[id] = string(b)
		}

		read, queries := countedRead(t, h)
		plain := h.x.deps.DB.Read
		h.x.deps.DB.Read = read
		rec := httptest.NewRecorder()
		api{x: h.x}.list(rec, httptest.NewRequest("GET", "/api/v1/rollouts?app=checkout&environment=prod", nil))
		h.x.deps.DB.Read = plain
		var out struct {
			Rollouts []json.RawMessage `json:"rollouts"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("GET /api/v1/rollouts answered %d %s (%v)", rec.Code, rec.Body, err)
		}
		got := map[string]string{}
		batches := map[string]map[string]int{}
		for _, raw := range out.Rollouts {
			var st StatusJSON
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(st)
			got[st.ID] = string(b)
			batches[st.ID] = map[string]int{}
			for _, s := range st.Rollout.Stages {
				for _, p := range s.Passes {
					for _, b := range p.Batches {
						batches[st.ID][b.State]++
					}
				}
			}
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("rollout %s in the list:\n%s\nits status says:\n%s", id, got[id], w)
			}
		}
		if len(got) != 3 || len(batches[ended]) != 1 || batches[ended][RunSuccess] == 0 ||
			batches[inFlight][RunQueued] == 0 || len(batches[queued]) != 1 || batches[queued]["pending"] == 0 {
			t.Errorf("batch states by rollout in the list: %v; want %s's all %s, %s's some %s, %s's all pending",
				batches, ended, RunSuccess, inFlight, RunQueued, queued)
		}
		// The rollouts of the page, their open unanswered lines, their
		// batches, their suspended installations.
		if n := queries.Load(); n != 4 {
			t.Errorf("the list of 3 rollouts sent %d queries, want 4 (one for each kind of row, whatever the page's length)", n)
		}
	})
}

// countedRead opens another reader of the harness's database whose
// queries are counted at the driver, so that what a handler reads through
// deps.DB.Read is counted without the handler knowing.
func countedRead(t *testing.T, h *harness) (*sql.DB, *atomic.Int64) {
	t.Helper()
	dsn := h.dbURL
	if h.x.deps.DB.Dialect == store.SQLite {
		path, err := store.SQLitePath(h.dbURL)
		if err != nil {
			t.Fatal(err)
		}
		dsn = "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=query_only(ON)"
	}
	n := &atomic.Int64{}
	db := sql.OpenDB(countingConnector{drv: h.x.deps.DB.Read.Driver(), dsn: dsn, n: n})
	t.Cleanup(func() { db.Close() })
	return db, n
}

type countingConnector struct {
	drv driver.Driver
	dsn string
	n   *atomic.Int64
}

func (c countingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: conn, n: c.n}, nil
}

func (c countingConnector) Driver() driver.Driver { return c.drv }

// countingConn counts the queries sent on a connection. Both drivers
// answer queries without a prepared statement, so that is the only path.
type countingConn struct {
	driver.Conn
	n *atomic.Int64
}

func (c countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.n.Add(1)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
