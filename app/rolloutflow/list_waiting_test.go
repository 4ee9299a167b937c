package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The list of an environment's rollouts (GET /api/v1/rollouts) left out
// the waiting field, so whoever watched the list saw a rollout running
// that moved nothing, with no word of the GitHub outage it waited out,
// while the rollout's own status said it. The list says it too, of each
// rollout that waits; the page's open unanswered lines are read in one
// query, not one per rollout.
func TestTheListOfRolloutsSaysWhichWaitsOutAnOutage(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := newHarnessOn(t, dbURL, "rollback-all", "", time.Minute)
		tokens := answerTokens(h)
		h.start(nil)
		tokens.set(http.StatusServiceUnavailable)
		h.x = h.executor() // no token of the installation cached
		h.tick()
		h.clock.set(h.rollout().WakeAt)
		h.tickAs(true)
		st, waiting := h.statusJSON(t)
		if waiting == "" {
			t.Fatalf("the status of the rollout GitHub does not answer for says no waiting; audit %+v", st.Audit)
		}
		// Another rollout of the environment, queued behind it, waits
		// out nothing.
		h.clock.set(h.clock.Now().Add(time.Second))
		h.open("r3:prod-eu/prod", "v3")
		rec, err := h.x.deps.Records.Get(context.Background(), "r3:prod-eu/prod")
		if err != nil {
			t.Fatal(err)
		}
		queued, err := h.x.create(context.Background(), rec, githubtest.InstallationID, h.rollout().Snapshot, "bob")
		if err != nil {
			t.Fatal(err)
		}

		rec2 := httptest.NewRecorder()
		api{x: h.x}.list(rec2, httptest.NewRequest("GET", "/api/v1/rollouts?app=checkout&environment=prod", nil))
		var out struct {
			Rollouts []struct {
				ID      string `json:"id"`
				Waiting string `json:"waiting"`
			} `json:"rollouts"`
		}
		if err := json.Unmarshal(rec2.Body.Bytes(), &out); rec2.Code != http.StatusOK || err != nil {
			t.Fatalf("GET /api/v1/rollouts answered %d %s (%v)", rec2.Code, rec2.Body, err)
		}
		got := map[string]string{}
		for _, r := range out.Rollouts {
			got[r.ID] = r.Waiting
		}
		if len(got) != 2 || got[h.id] != waiting || got[queued.ID] != "" {
			t.Errorf("the list's waiting by rollout: %q; want %s's %q, as its status says, and none for %s",
				got, h.id, waiting, queued.ID)
		}

		q := &countingQuerier{querier: h.x.deps.DB.Read}
		open, err := openUnansweredOf(context.Background(), q, []string{queued.ID, h.id})
		if err != nil {
			t.Fatal(err)
		}
		if q.queries != 1 || len(open) != 1 || waitingFor(h.rollout().Machine, open[h.id]) != waiting {
			t.Errorf("%d queries for the open unanswered lines of two rollouts, %+v; want one query, and %s's line only",
				q.queries, open, h.id)
		}
	})
}

// countingQuerier counts the queries sent through it.
type countingQuerier struct {
	querier
	queries int
}

func (q *countingQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q.queries++
	return q.querier.QueryContext(ctx, query, args...)
}

func (q *countingQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	q.queries++
	return q.querier.QueryRowContext(ctx, query, args...)
}
