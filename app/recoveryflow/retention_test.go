package recoveryflow

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// storeEpisode stores the episode of acme/checkout's run id, attempt 1
// handled, in state, last changed at updated, of release (or none).
func storeEpisode(t *testing.T, tx *sql.Tx, id int64, state State, updated time.Time, release string) {
	t.Helper()
	ep := Episode{Repository: "acme/checkout", RunID: id, RunAttempt: 1, RetryCount: 1, State: state, ReleaseID: release,
		Seq: 1, CreatedAt: updated, UpdatedAt: updated}
	if err := saveEpisode(context.Background(), tx, ep, 0); err != nil {
		t.Fatal(err)
	}
}

func inTx(t *testing.T, f *flow, fn func(tx *sql.Tx)) {
	t.Helper()
	if err := f.deps.DB.InTx(context.Background(), func(tx *sql.Tx) error { fn(tx); return nil }); err != nil {
		t.Fatal(err)
	}
}

func sweepRetention(t *testing.T, f *flow) {
	t.Helper()
	job := &river.Job[RetentionSweepArgs]{JobRow: &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: jobAttempts}}
	if err := (&retentionSweepWorker{f: f}).Work(context.Background(), job); err != nil {
		t.Fatalf("retention sweep: %v", err)
	}
}

func exists(t *testing.T, f *flow, q string, args ...any) bool {
	t.Helper()
	var ok bool
	if err := f.deps.DB.Read.QueryRow(`SELECT EXISTS (`+q+`)`, args...).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// Finished episodes whose last change is past the retention go, with their
// rollback dispatches and the alert issue rows no episode holds any more.
// Episodes in progress stay whatever their age, and so do recent ones,
// those a live job will still read, and the alert issue rows of a release
// a kept episode failed on. What the kept rows guard still works.
func TestRetentionSweepDeletesFinishedRecoveryRowsOnly(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, _, clock := rerunFixture(t, dbURL)
		ctx := context.Background()
		now := clock.Now()
		old, recent := now.Add(-rerunHorizon-time.Hour), now.Add(-rerunHorizon+time.Hour)
		gone := map[int64]State{1: StateRecovered, 2: StateAlerted, 3: StateRolledBack, 4: StateSkipped, 5: StateStopped, 9: StateAlerted}
		kept := map[int64]State{10: StateRecovered, 11: StateRetryScheduled, 12: StateRetrying, 13: StateRollingBack,
			14: StateAlerted, 15: StateRolledBack, 16: StateAlerted}
		inTx(t, f, func(tx *sql.Tx) {
			for id, st := range gone {
				storeEpisode(t, tx, id, st, old, "")
			}
			storeEpisode(t, tx, 10, StateRecovered, recent, "")
			for _, id := range []int64{11, 12, 13, 14, 15} {
				storeEpisode(t, tx, id, kept[id], old, "")
			}
			storeEpisode(t, tx, 16, StateAlerted, recent, "rel-A") // release rel-A failed twice
			if _, err := tx.Exec(`UPDATE episodes SET release_id = 'rel-A' WHERE run_id = 9`); err != nil {
				t.Fatal(err)
			}
			// 15 rolled back by a release whose outcome job is still queued.
			if _, err := tx.Exec(`UPDATE episodes SET rollback_release_id = 'rb-15' WHERE run_id = 15`); err != nil {
				t.Fatal(err)
			}
			for _, d := range []struct {
				episode, run int64
			}{{3, 903}, {10, 910}} {
				if _, err := tx.Exec(`INSERT INTO rollback_dispatches (episode_repository, episode_run_id, attempt, repository, workflow,
					run_id, dispatched_at) VALUES ('acme/checkout', $1, 1, 'acme/checkout', 'deploy.yml', $2, $3)`,
					d.episode, d.run, store.Micros(old)); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range []struct {
				key     string
				created time.Time
			}{{RunKey("acme/checkout", 2), old}, {"rel-A", old}, {RunKey("acme/checkout", 14), old},
				{"rel-gone", old}, {"rel-new", now}} {
				if _, err := tx.Exec(`INSERT INTO recovery_issues (repository, alert_key, issue_number, created_at)
					VALUES ('acme/checkout', $1, 5, $2)`, r.key, store.Micros(r.created)); err != nil {
					t.Fatal(err)
				}
			}
		})
		// Jobs that will still read 14 (its check run) and 15; a finished
		// job of 5 holds nothing back.
		rc := f.deps.River()
		if _, err := rc.Insert(ctx, CheckArgs{Repository: "acme/checkout", RunID: 14, Seq: 1}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Insert(ctx, RollbackOutcomeArgs{ReleaseID: "rb-15", Outcome: OutcomeHealthy}, nil); err != nil {
			t.Fatal(err)
		}
		res, err := rc.Insert(ctx, AlertArgs{Repository: "acme/checkout", RunID: 5, Attempt: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.deps.DB.Write.Exec(`UPDATE river_job SET state = 'completed', finalized_at = CURRENT_TIMESTAMP WHERE id = $1`, res.Job.ID); err != nil {
			t.Fatal(err)
		}

		sweepRetention(t, f)

		for id, st := range gone {
			if ep, ok, _ := getEpisode(ctx, f.deps.DB.Read, "acme/checkout", id); ok {
				t.Errorf("episode %d (%s, last changed past retention) was kept as %s", id, st, ep.State)
			}
		}
		for id, st := range kept {
			if _, ok, _ := getEpisode(ctx, f.deps.DB.Read, "acme/checkout", id); !ok {
				t.Errorf("episode %d (%s) was deleted", id, st)
			}
		}
		if exists(t, f, `SELECT 1 FROM rollback_dispatches WHERE episode_run_id = 3`) {
			t.Error("the rollback dispatch of deleted episode 3 was kept")
		}
		if !exists(t, f, `SELECT 1 FROM rollback_dispatches WHERE episode_run_id = 10`) {
			t.Error("the rollback dispatch of kept episode 10 was deleted")
		}
		issueRow := func(key string) bool {
			return exists(t, f, `SELECT 1 FROM recovery_issues WHERE repository = 'acme/checkout' AND alert_key = $1`, key)
		}
		for _, key := range []string{RunKey("acme/checkout", 2), "rel-gone"} {
			if issueRow(key) {
				t.Errorf("alert issue row %s, which no episode holds, was kept", key)
			}
		}
		for _, key := range []string{"rel-A", RunKey("acme/checkout", 14), "rel-new"} {
			if !issueRow(key) {
				t.Errorf("alert issue row %s was deleted", key)
			}
		}

		// What the kept rows guard: a redelivered failure of kept episode
		// 10 is decided once, not again; the run of its rollback dispatch
		// is ripcord's rollback, not a deploy to decide.
		h := &workflowRunHandler{f: f}
		if c, err := h.Handle(ctx, failedRunDelivery(t, "again", 10, "abc")); err != nil || c != nil {
			t.Errorf("redelivered failure of kept episode 10: commit %v, err %v; want nothing to do", c != nil, err)
		}
		if _, own, err := f.onDispatchedRun(ctx, pipeline.Delivery{ID: "rb"}, "acme/checkout", runInfo{ID: 910, Attempt: 1,
			Conclusion: "failure"}); err != nil || !own {
			t.Errorf("run 910 of kept episode 10's rollback dispatch: own %v, err %v; want ripcord's own", own, err)
		}

		// Once the live jobs ended, the next sweep takes 14 and 15, and
		// the run key row of 14 with it.
		if _, err := f.deps.DB.Write.Exec(`UPDATE river_job SET state = 'completed', finalized_at = CURRENT_TIMESTAMP`); err != nil {
			t.Fatal(err)
		}
		sweepRetention(t, f)
		for _, id := range []int64{14, 15} {
			if _, ok, _ := getEpisode(ctx, f.deps.DB.Read, "acme/checkout", id); ok {
				t.Errorf("episode %d was kept after its job ended", id)
			}
		}
		if issueRow(RunKey("acme/checkout", 14)) {
			t.Error("the alert issue row of deleted episode 14 was kept")
		}
	})
}

// A retention longer than the horizon keeps finished episodes longer.
func TestRetentionSweepKeepsEpisodesForTheConfiguredRetention(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, _, clock := rerunFixture(t, dbURL)
		f.deps.Config = &config.Config{Retention: 2 * rerunHorizon}
		now := clock.Now()
		inTx(t, f, func(tx *sql.Tx) {
			storeEpisode(t, tx, 1, StateRecovered, now.Add(-rerunHorizon-time.Hour), "")
			storeEpisode(t, tx, 2, StateRecovered, now.Add(-2*rerunHorizon-time.Hour), "")
		})
		sweepRetention(t, f)
		if _, ok, _ := getEpisode(context.Background(), f.deps.DB.Read, "acme/checkout", 1); !ok {
			t.Error("an episode younger than the retention was deleted")
		}
		if _, ok, _ := getEpisode(context.Background(), f.deps.DB.Read, "acme/checkout", 2); ok {
			t.Error("an episode older than the retention was kept")
		}
	})
}

// A round of the sweep deletes retentionChunk rows at most, so that it
// holds SQLite's one writer briefly; a sweep with more rows past
// retention than one round deletes takes them all, over several rounds.
func TestRetentionSweepDeletesMoreThanOneRound(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, _, clock := rerunFixture(t, dbURL)
		old := clock.Now().Add(-rerunHorizon - time.Hour)
		const n = 2*retentionChunk + 7
		inTx(t, f, func(tx *sql.Tx) {
			for id := int64(1); id <= n; id++ {
				storeEpisode(t, tx, id, StateRecovered, old, "")
				if _, err := tx.Exec(`INSERT INTO recovery_issues (repository, alert_key, created_at) VALUES ('acme/checkout', $1, $2)`,
					RunKey("acme/checkout", id), store.Micros(old)); err != nil {
					t.Fatal(err)
				}
			}
		})
		left := func() (episodes, issues int) {
			t.Helper()
			if err := f.deps.DB.Read.QueryRow(`SELECT (SELECT COUNT(*) FROM episodes), (SELECT COUNT(*) FROM recovery_issues)`).
				Scan(&episodes, &issues); err != nil {
				t.Fatal(err)
			}
			return episodes, issues
		}
		cutoff := clock.Now().Add(-rerunHorizon)
		inTx(t, f, func(tx *sql.Tx) {
			if got, err := sweepEpisodesRound(context.Background(), tx, sweepEpisodesSQL(f.deps.DB.Dialect), cutoff); err != nil || got != retentionChunk {
				t.Errorf("one round deleted %d episodes (%v), want %d", got, err, retentionChunk)
			}
		})
		if episodes, _ := left(); episodes != n-retentionChunk {
			t.Errorf("after one round: %d episodes left of %d, want %d", episodes, n, n-retentionChunk)
		}
		if _, err := sweepEpisodes(context.Background(), f.deps.DB, cutoff); err != nil {
			t.Fatal(err)
		}
		inTx(t, f, func(tx *sql.Tx) {
			s := issueSweep{cutoff: cutoff}
			if got, err := s.round(context.Background(), tx); err != nil || got != retentionChunk || s.deleted != retentionChunk {
				t.Errorf("one round read %d and deleted %d alert issue rows (%v), want %d", got, s.deleted, err, retentionChunk)
			}
		})
		if _, issues := left(); issues != n-retentionChunk {
			t.Errorf("after one round: %d alert issue rows left of %d, want %d", issues, n, n-retentionChunk)
		}
		sweepRetention(t, f)
		if episodes, issues := left(); episodes != 0 || issues != 0 {
			t.Errorf("after one sweep: %d episodes and %d alert issue rows left of %d, want none", episodes, issues, n)
		}
	})
}
