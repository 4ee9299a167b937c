package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// workCheck runs attempt of check-run job id, of ep as it stands.
func workCheck(ctx context.Context, f *flow, ep Episode, id int64, attempt int) error {
	job := &river.Job[CheckArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: attempt, MaxAttempts: jobAttempts},
		Args: CheckArgs{Repository: ep.Repository, RunID: ep.RunID, Seq: ep.Seq, InstallationID: githubtest.InstallationID}}
	return (&checkWorker{f: f}).Work(ctx, job)
}

// The job that claimed the creation of an episode's check run is gone:
// the next check-run job takes the claim over and creates the check run,
// instead of snoozing for ever behind it. A live claimant is waited for.
func TestCheckRunClaimOfAJobThatIsGoneIsTakenOver(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		fake := githubtest.NewServer(t)
		f := workerFlow(t, dbURL, fake, ghclient.NewStepClock(time.Now().UTC()), nil)
		ctx := context.Background()
		claimBy := func(ep Episode, job int64) {
			if _, err := f.deps.DB.Write.ExecContext(ctx, `UPDATE episodes SET check_claim = $3 WHERE repository = $1 AND run_id = $2`,
				ep.Repository, ep.RunID, job); err != nil {
				t.Fatal(err)
			}
		}
		work := func(ep Episode, jobID int64) error { return workCheck(ctx, f, ep, jobID, 1) }
		created := func() int { return fake.Count("POST", "/repos/{owner}/{repo}/check-runs") }

		live := scheduled(t, f, 52, time.Now().Add(-time.Hour))
		row, err := f.deps.River().Insert(ctx, CheckArgs{Repository: live.Repository, RunID: 52, Seq: 99}, nil)
		if err != nil {
			t.Fatal(err)
		}
		claimBy(live, row.Job.ID)
		var snooze *river.JobSnoozeError
		if err := work(live, row.Job.ID+1); !errors.As(err, &snooze) || created() != 0 {
			t.Errorf("check run while a live job creates it: %v, %d created; want a snooze", err, created())
		}

		gone := scheduled(t, f, 51, time.Now().Add(-time.Hour))
		claimBy(gone, 999_999) // no such job any more
		if err := work(gone, 1_000_001); err != nil {
			t.Fatalf("check run with a dead claim: %v, want it created", err)
		}
		if created() != 1 {
			t.Errorf("check runs created = %d, want 1", created())
		}
		var id int64
		if err := f.deps.DB.Read.QueryRow(`SELECT check_run_id FROM episodes WHERE run_id = 51`).Scan(&id); err != nil || id == 0 {
			t.Errorf("check run id stored = %d (%v), want the created one", id, err)
		}
	})
}

// A retried creation looks for the run an earlier attempt made. A run of
// the same name and external id that a workflow's token or another App
// made is not it: storing its id would have every update refused by
// GitHub, so the episode's own run is created and kept instead.
func TestRetriedCheckRunIgnoresAnotherAppsRun(t *testing.T) {
	t.Parallel()
	fake := githubtest.NewServer(t)
	f := workerFlow(t, testdb.MigratedURL(t, "sqlite"), fake, ghclient.NewStepClock(time.Now().UTC()), nil)
	ctx := context.Background()
	ep := scheduled(t, f, 61, time.Now().Add(-time.Hour))
	foreign := fake.AddCheckRun(ep.Repository, githubtest.CheckRun{Name: CheckName, HeadSHA: ep.HeadSHA,
		ExternalID: RunKey(ep.Repository, ep.RunID), Status: "in_progress", AppSlug: "github-actions"})
	work := func(attempt int) error { return workCheck(ctx, f, ep, 7, attempt) }
	if err := work(2); err != nil { // a retry: it looks for an earlier attempt's run first
		t.Fatalf("retried check-run job: %v", err)
	}
	var stored int64
	if err := f.deps.DB.Read.QueryRow(`SELECT check_run_id FROM episodes WHERE run_id = 61`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	var own []githubtest.CheckRun
	for _, cr := range fake.CheckRuns(ep.Repository) {
		if cr.AppSlug == "" {
			own = append(own, cr)
		}
	}
	if len(own) != 1 || stored != own[0].ID || stored == foreign.ID {
		t.Fatalf("stored check run %d, own runs %+v (the other App's is %d): want the episode's own run created and stored",
			stored, own, foreign.ID)
	}
	if err := work(1); err != nil {
		t.Errorf("updating the stored run: %v", err)
	}
	for _, cr := range fake.CheckRuns(ep.Repository) {
		if cr.ID == foreign.ID && cr.Updates != 0 {
			t.Errorf("the other App's run was updated %d times", cr.Updates)
		}
	}
}

// A check-run creation whose answer was lost is retried after the episode
// moved to a later attempt: the retry finds the run the lost creation made
// (in progress, under the earlier attempt's external id) instead of making
// a second one beside it; a completed run the episode left behind for a
// new one is not taken.
func TestRetriedCheckRunFindsTheRunOfAnEarlierAttempt(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		fake := githubtest.NewServer(t)
		f := workerFlow(t, dbURL, fake, ghclient.NewStepClock(time.Now().UTC()), nil)
		ctx := context.Background()
		ep := scheduled(t, f, 71, time.Now().Add(-time.Hour))
		left := fake.AddCheckRun(ep.Repository, githubtest.CheckRun{Name: CheckName, HeadSHA: ep.HeadSHA,
			ExternalID: RunKey(ep.Repository, ep.RunID) + "/attempt-2", Status: "completed", Conclusion: "neutral"})
		lost := fake.AddCheckRun(ep.Repository, githubtest.CheckRun{Name: CheckName, HeadSHA: ep.HeadSHA,
			ExternalID: RunKey(ep.Repository, ep.RunID), Status: "in_progress"})
		next := ep
		next.RunAttempt, next.Seq = 3, ep.Seq+1
		if err := f.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return saveEpisode(ctx, tx, next, ep.Seq) }); err != nil {
			t.Fatal(err)
		}
		if err := workCheck(ctx, f, next, 8, 2); err != nil {
			t.Fatalf("retried check-run job: %v", err)
		}
		var stored int64
		if err := f.deps.DB.Read.QueryRow(`SELECT check_run_id FROM episodes WHERE run_id = 71`).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if n := fake.Count("POST", "/repos/{owner}/{repo}/check-runs"); n != 0 || stored != lost.ID {
			t.Errorf("created %d check runs, stored %d; want none created and %d (not %d) stored", n, stored, lost.ID, left.ID)
		}
	})
}

// The check-run job of a state reads the episode, and the episode moves on
// (a person cancelled the re-run) before that job writes: the job of the
// newer state writes first. GitHub keeps the last write, so the older job
// must not leave its state showing, whether GitHub answered its look at
// the run before the newer write (a stale PATCH) or after it (a completed
// run it would replace with a new one): one check run, "Stopped".
func TestACheckRunJobOvertakenByANewerStateLeavesTheNewerShowing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		newerAnswers bool // the newer job writes before GitHub answers the older job's read
	}{{"the newer job writes after GitHub answered the read", false}, {"the newer job writes before GitHub answers the read", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fake := githubtest.NewServer(t)
			f := workerFlow(t, testdb.MigratedURL(t, "sqlite"), fake, ghclient.NewStepClock(time.Now().UTC()), nil)
			ctx := context.Background()
			ep := scheduled(t, f, 81, time.Now().Add(-time.Hour))
			work := func(ep Episode, jobID int64) error { return workCheck(ctx, f, ep, jobID, 1) }
			if err := work(ep, 1); err != nil {
				t.Fatalf("first check-run job: %v", err)
			}

			const read = "GET /repos/{owner}/{repo}/check-runs/{check_run_id}"
			answer := fake.Default(read)
			var once sync.Once
			var newer error
			// stop runs in the fake's handler, not the test's goroutine: it
			// hands its failures to newer rather than end the test there.
			stop := func() {
				next, ok := ep.Stop(2, "attempt 2 was cancelled", f.deps.Now())
				if !ok {
					newer = errors.New("setup: the episode does not stop")
					return
				}
				if err := f.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return saveEpisode(ctx, tx, next, ep.Seq) }); err != nil {
					newer = err
					return
				}
				newer = work(next, 3)
			}
			fake.Handle(read, func(w http.ResponseWriter, r *http.Request, params map[string]string) {
				if c.newerAnswers {
					once.Do(stop)
				}
				answer(w, r, params)
				if !c.newerAnswers {
					once.Do(stop)
				}
			})
			// The older job renders the episode as scheduled to retry; its
			// look at the run (is it completed?) is where the newer job
			// overtakes it.
			if err := work(ep, 2); err != nil {
				t.Fatalf("the older check-run job: %v", err)
			}
			if newer != nil {
				t.Fatalf("the newer check-run job: %v", newer)
			}
			runs := fake.CheckRuns(ep.Repository)
			var shown []string
			for _, cr := range runs {
				shown = append(shown, cr.Status+" "+strconv.Quote(cr.Title))
			}
			if len(runs) != 1 || runs[0].Status != "completed" || !strings.HasPrefix(runs[0].Title, "Stopped") {
				t.Errorf("check runs: %s; want one, completed, Stopped", strings.Join(shown, ", "))
			}
		})
	}
}

// The episode moves on while a check-run job creates its run, and the
// newer state's job is queued. When that job has not started, it writes
// after the older one, so the older job leaves the newer state to it: a
// reviewer is told each state once. When it is running, the order of the
// two writes is unknown, so the older job writes the newer state itself.
func TestACheckRunJobLeavesANewerStateToItsQueuedJob(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		state    string // of the newer job when the older one looks
		rewrites int    // PATCHes by the older job
	}{{"queued", "available", 0}, {"running", "running", 1}} {
		t.Run(c.name, func(t *testing.T) {
			testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
				t.Parallel()
				fake := githubtest.NewServer(t)
				f := workerFlow(t, dbURL, fake, ghclient.NewStepClock(time.Now().UTC()), nil)
				ctx := context.Background()
				ep := scheduled(t, f, 91, time.Now().Add(-time.Hour))
				work := func(ep Episode, jobID int64) error { return workCheck(ctx, f, ep, jobID, 1) }
				const create = "POST /repos/{owner}/{repo}/check-runs"
				answer := fake.Default(create)
				next, ok := ep.Stop(2, "attempt 2 was cancelled", f.deps.Now())
				if !ok {
					t.Fatal("setup: the episode does not stop")
				}
				var moved error
				fake.Handle(create, func(w http.ResponseWriter, r *http.Request, params map[string]string) {
					answer(w, r, params)
					moved = f.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
						if err := saveEpisode(ctx, tx, next, ep.Seq); err != nil {
							return err
						}
						if err := f.queueCheck(ctx, tx, next); err != nil {
							return err
						}
						_, err := tx.ExecContext(ctx, `UPDATE river_job SET state = $1 WHERE kind = 'recovery_check'`, c.state)
						return err
					})
				})
				if err := work(ep, 1); err != nil {
					t.Fatalf("the older check-run job: %v", err)
				}
				if moved != nil {
					t.Fatalf("setup: moving the episode on: %v", moved)
				}
				if n := fake.Count("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"); n != c.rewrites {
					t.Errorf("the older job wrote the newer state %d times, want %d", n, c.rewrites)
				}
				if err := work(next, 2); err != nil {
					t.Fatalf("the newer check-run job: %v", err)
				}
				runs := fake.CheckRuns(ep.Repository)
				if len(runs) != 1 || runs[0].Status != "completed" || !strings.HasPrefix(runs[0].Title, "Stopped") {
					t.Errorf("check runs: %+v; want one, completed, Stopped", runs)
				}
			})
		})
	}
}
