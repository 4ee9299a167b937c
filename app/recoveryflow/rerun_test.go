package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/recovery"
)

// writeTimes records, on the clock, when each content-creating request
// left ripcord (below every middleware, so after pacing).
type writeTimes struct {
	clock *ghclient.StepClock
	mu    sync.Mutex
	at    []time.Time
}

func (w *writeTimes) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && !strings.HasSuffix(r.URL.Path, "/access_tokens") {
		w.mu.Lock()
		w.at = append(w.at, w.clock.Now())
		w.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// workerFlow is the recovery flow on a real database and the fake GitHub,
// with an insert-only job queue: the test calls workers itself.
func workerFlow(t *testing.T, dbURL string, fake *githubtest.Server, clock *ghclient.StepClock, transport http.RoundTripper) *flow {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rc := testdb.InsertOnlyRiver(t, db)
	cc, err := ghclient.New(ghclient.Config{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t), APIURL: fake.URL(),
		Clock: clock, Transport: transport})
	if err != nil {
		t.Fatal(err)
	}
	return newFlow(pipeline.Deps{DB: db, Records: records.NewStore(db), River: func() *river.Client[*sql.Tx] { return rc },
		GitHub: cc, Registerer: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock.Now,
		App: func() pipeline.AppIdentity { return pipeline.AppIdentity{Configured: true, ID: githubtest.AppID} }})
}

// rerunFixture is workerFlow with a fake GitHub of its own and a step
// clock started now, as the re-run tests use it.
func rerunFixture(t *testing.T, dbURL string) (*flow, *githubtest.Server, *ghclient.StepClock) {
	t.Helper()
	fake := githubtest.NewServer(t)
	clock := ghclient.NewStepClock(time.Now().UTC())
	return workerFlow(t, dbURL, fake, clock, nil), fake, clock
}

// scheduled stores an episode waiting for its first retry of run id.
func scheduled(t *testing.T, f *flow, id int64, created time.Time) Episode {
	t.Helper()
	in := recovery.Input{Now: f.deps.Now(), RetryCount: 1, Policy: recovery.DefaultPolicy(), FailureType: "health_check_failure",
		Run: recovery.Run{ID: id, Completed: true, Attempt: 1, CreatedAt: created}}
	ep := Episode{Repository: "acme/checkout", RunID: id, InstallationID: githubtest.InstallationID, HeadSHA: "abc", App: "checkout", Environment: "staging"}
	ep, _ = ep.Fail(Failure{Attempt: 1, Decision: recovery.Decide(in), Context: Context{Input: in}, At: f.deps.Now()})
	if ep.State != StateRetryScheduled {
		t.Fatalf("setup: %s (%s)", ep.State, ep.Decision.Reason)
	}
	if err := f.deps.DB.InTx(context.Background(), func(tx *sql.Tx) error { return saveEpisode(context.Background(), tx, ep, 0) }); err != nil {
		t.Fatal(err)
	}
	return ep
}

func fire(t *testing.T, f *flow, id int64) {
	t.Helper()
	job := &river.Job[RerunArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: 1, MaxAttempts: jobAttempts},
		Args: RerunArgs{Repository: "acme/checkout", RunID: id, Attempt: 1, InstallationID: githubtest.InstallationID}}
	if err := (&rerunWorker{f: f}).Work(context.Background(), job); err != nil {
		t.Fatalf("re-run of %d: %v", id, err)
	}
}

// 100 retries due at once go out through ghclient's pacing: no 60 seconds
// (of the fake clock) hold more than 80 re-runs, and every one is sent.
func TestScheduledRetriesArePacedUnderTheSecondaryLimit(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		fake := githubtest.NewServer(t)
		clock := ghclient.NewStepClock(time.Now().UTC())
		rec := &writeTimes{clock: clock}
		f := workerFlow(t, dbURL, fake, clock, rec)
		const n = 100
		for i := int64(1); i <= n; i++ {
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: i})
			scheduled(t, f, i, time.Now().Add(-time.Hour))
		}
		start := clock.Now()
		for i := int64(1); i <= n; i++ {
			fire(t, f, i)
		}
		if got := fake.Count("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"); got != n {
			t.Fatalf("re-runs sent = %d, want %d", got, n)
		}
		at := append([]time.Time(nil), rec.at...)
		sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
		busiest := 0
		for i := range at {
			j := sort.Search(len(at), func(k int) bool { return !at[k].Before(at[i].Add(time.Minute)) })
			busiest = max(busiest, j-i)
		}
		t.Logf("%d writes over %s of fake time; the busiest minute held %d", len(at), clock.Now().Sub(start), busiest)
		if busiest > 80 {
			t.Errorf("a minute held %d writes, over GitHub's 80", busiest)
		}
		if clock.Now().Sub(start) < time.Minute {
			t.Errorf("the 81st write did not wait: %s of fake time passed", clock.Now().Sub(start))
		}
	})
}

func TestScheduledRetryAtFireTime(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, clock := rerunFixture(t, dbURL)
		ctx := context.Background()
		rerun := "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"
		reruns := func(id int64) int {
			n := 0
			for _, r := range fake.Requests() {
				if r.Route == rerun && r.Params["run_id"] == strconv.FormatInt(id, 10) {
					n++
				}
			}
			return n
		}

		t.Run("the 30 days ran out during the backoff: no re-run, the decision moves on", func(t *testing.T) {
			created := time.Now().Add(-recovery.MaxRunAge + time.Minute)
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 11, CreatedAt: created})
			scheduled(t, f, 11, created)
			clock.Sleep(ctx, 2*time.Minute) // the retry fires after the run turned 30 days old
			fire(t, f, 11)
			if ep := checkoutEpisode(t, f, 11); reruns(11) != 0 || ep.State != StateAlerted || ep.Decision.Rule != recovery.RuleRunTooOld {
				t.Errorf("re-runs %d, state %s, rule %s", reruns(11), ep.State, ep.Decision.Rule)
			}
		})
		t.Run("due before the 30 days ran out: re-run, its limit checked at its time and not one backoff later", func(t *testing.T) {
			// The first retry waits 10s and falls due 5s before the run
			// turns 30 days old: GitHub accepts the re-run then.
			created := clock.Now().Add(-recovery.MaxRunAge + 15*time.Second)
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 15, CreatedAt: created})
			scheduled(t, f, 15, created)
			clock.Sleep(ctx, 10*time.Second)
			fire(t, f, 15)
			if ep := checkoutEpisode(t, f, 15); reruns(15) != 1 || ep.State != StateRetrying {
				t.Errorf("re-runs %d, state %s, rule %s: %s", reruns(15), ep.State, ep.Decision.Rule, ep.Decision.Reason)
			}
		})
		t.Run("GitHub refuses: an alert that quotes GitHub", func(t *testing.T) {
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 12})
			fake.Handle("POST "+rerun, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = io.WriteString(w, `{"message": "Resource not accessible by integration"}`)
			})
			scheduled(t, f, 12, time.Now().Add(-time.Hour))
			fire(t, f, 12)
			ep := checkoutEpisode(t, f, 12)
			if ep.State != StateAlerted || ep.Decision.Rule != RuleRerunRefused || !strings.Contains(ep.Decision.Reason, "Resource not accessible") {
				t.Errorf("state %s, rule %s: %s", ep.State, ep.Decision.Rule, ep.Decision.Reason)
			}
			// Seed 000 reports this 403 as a missing permission: the alert names it.
			if !strings.Contains(ep.Decision.Reason, "actions: write") {
				t.Errorf("the alert does not name the missing permission: %s", ep.Decision.Reason)
			}
		})
		t.Run("GitHub's rate limit is not a refusal: no alert, the job waits for it", func(t *testing.T) {
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 16})
			var lift atomic.Bool
			var limited atomic.Int32
			// A 403 go-github cannot tell from a refusal: no documentation
			// link, no x-ratelimit-remaining, only the Retry-After.
			fake.RefuseForRateLimit("POST "+rerun, &lift, &limited, "Retry-After", "3600")
			defer lift.Store(true)
			scheduled(t, f, 16, time.Now().Add(-time.Hour))
			job := &river.Job[RerunArgs]{JobRow: &rivertype.JobRow{ID: 16, Attempt: 1, MaxAttempts: jobAttempts},
				Args: RerunArgs{Repository: "acme/checkout", RunID: 16, Attempt: 1, InstallationID: githubtest.InstallationID}}
			err := (&rerunWorker{f: f}).Work(ctx, job)
			ep := checkoutEpisode(t, f, 16)
			var snooze *river.JobSnoozeError
			if !errors.As(err, &snooze) || limited.Load() == 0 || ep.State != StateRetryScheduled {
				t.Errorf("rate-limited re-run: error %v, %d refusals, state %s, rule %s: %s; want a snooze and the retry still scheduled",
					err, limited.Load(), ep.State, ep.Decision.Rule, ep.Decision.Reason)
			}
		})
		t.Run("re-run by hand meanwhile: no re-run, the episode waits for it", func(t *testing.T) {
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 13, RunAttempt: 1})
			scheduled(t, f, 13, time.Now().Add(-time.Hour))
			fake.CompleteRun("acme/checkout", 13, "failure")
			fake.Handle("GET /repos/{owner}/{repo}/actions/runs/{run_id}", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"id": 13, "run_attempt": 2, "status": "in_progress"}`)
			})
			fire(t, f, 13)
			if ep := checkoutEpisode(t, f, 13); reruns(13) != 0 || ep.State != StateRetrying || !strings.Contains(RenderCheck(ep).Title, "attempt 2") {
				t.Errorf("re-runs %d, state %s, check run %q", reruns(13), ep.State, RenderCheck(ep).Title)
			}
		})
		t.Run("the episode closed meanwhile: GitHub is not even asked", func(t *testing.T) {
			before := len(fake.Requests())
			ep := scheduled(t, f, 14, time.Now().Add(-time.Hour))
			next, _ := ep.Succeed(2, clock.Now())
			if err := f.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return saveEpisode(ctx, tx, next, ep.Seq) }); err != nil {
				t.Fatal(err)
			}
			fire(t, f, 14)
			if got := len(fake.Requests()) - before; got != 0 {
				t.Errorf("%d requests to GitHub for a closed episode", got)
			}
		})
	})
}

// acceptedBehindA502 makes the fake GitHub accept the first re-run of run id
// but answer it 502, and refuse every repeat because the run is running
// again; it returns how many re-runs were asked for.
func acceptedBehindA502(fake *githubtest.Server, id int64) func() int {
	var mu sync.Mutex
	posts := 0
	fake.Handle("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		mu.Lock()
		posts++
		first := posts == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if first {
			// Accepted: from now on the run shows its second attempt, running.
			fake.Handle("GET /repos/{owner}/{repo}/actions/runs/{run_id}", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"id": `+strconv.FormatInt(id, 10)+`, "run_attempt": 2, "status": "in_progress"}`)
			})
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, `{"message": "Server Error"}`)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message": "This workflow run is not completed"}`)
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return posts
	}
}

func countJobs(t *testing.T, f *flow, kind string) int {
	t.Helper()
	var n int
	if err := f.deps.DB.Read.QueryRow(`SELECT COUNT(*) FROM river_job WHERE kind = $1`, kind).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// GitHub accepts the re-run but answers 502; ghclient repeats the request
// (re-runs are repeatable) and GitHub refuses the repeat because the run is
// running again. The re-run happened: the episode waits for it, no alert.
func TestReRunAcceptedBehindA5xxIsNotAnAlert(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, _ := rerunFixture(t, dbURL)
		fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 21, RunAttempt: 1})
		fake.CompleteRun("acme/checkout", 21, "failure")
		posts := acceptedBehindA502(fake, 21)
		scheduled(t, f, 21, time.Now().Add(-time.Hour))
		fire(t, f, 21)
		ep := checkoutEpisode(t, f, 21)
		if posts() < 2 {
			t.Fatalf("the 502 was not repeated (%d requests): the test does not test the repeat", posts())
		}
		if ep.State != StateRetrying {
			t.Errorf("state %s (rule %s: %s), want retrying: GitHub is re-running the run", ep.State, ep.Decision.Rule, ep.Decision.Reason)
		}
		if n := countJobs(t, f, "recovery_alert"); n != 0 {
			t.Errorf("alert jobs queued = %d, want none", n)
		}
	})
}

// The same for /ripcord retry: the person is not told GitHub refused a
// re-run that is running.
func TestCommandReRunAcceptedBehindA5xxIsNotRefused(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, _ := rerunFixture(t, dbURL)
		fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 22, RunAttempt: 1})
		fake.CompleteRun("acme/checkout", 22, "failure")
		posts := acceptedBehindA502(fake, 22)
		job := &river.Job[CommandRerunArgs]{JobRow: &rivertype.JobRow{ID: 22, Attempt: 1, MaxAttempts: jobAttempts},
			Args: CommandRerunArgs{Repository: "acme/checkout", RunID: 22, Attempt: 1, InstallationID: githubtest.InstallationID,
				PullRequest: 3, CommentID: 99}}
		if err := (&commandRerunWorker{f: f}).Work(context.Background(), job); err != nil {
			t.Errorf("command re-run: %v, want done", err)
		}
		if posts() < 2 {
			t.Fatalf("the 502 was not repeated (%d requests): the test does not test the repeat", posts())
		}
		if n := countJobs(t, f, "comment_reply"); n != 0 {
			t.Errorf("replies queued = %d, want none: the re-run is running", n)
		}
	})
}

// goneOrUnavailable makes the fake GitHub answer 404 for run gone, show
// every other run as its first attempt, failed an hour ago, and answer
// every re-run 503.
func goneOrUnavailable(fake *githubtest.Server, gone int64) {
	fake.Handle("GET /repos/{owner}/{repo}/actions/runs/{run_id}", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		if p["run_id"] == strconv.FormatInt(gone, 10) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message": "Not Found"}`)
			return
		}
		_, _ = io.WriteString(w, `{"id": `+p["run_id"]+`, "run_attempt": 1, "status": "completed", "conclusion": "failure", "created_at": "`+
			time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)+`"}`)
	})
	fake.Handle("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"message": "Service Unavailable"}`)
	})
}

// A scheduled retry GitHub keeps failing, or whose run GitHub no longer
// knows, does not leave the episode "Retry 1 of 3" forever once the job
// gives up: the episode becomes an alert that says why.
func TestScheduledRetryThatCannotBeCarriedOutAlerts(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, _ := rerunFixture(t, dbURL)
		ctx := context.Background()
		work := func(id int64, attempt int) error {
			job := &river.Job[RerunArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: attempt, MaxAttempts: jobAttempts},
				Args: RerunArgs{Repository: "acme/checkout", RunID: id, Attempt: 1, InstallationID: githubtest.InstallationID}}
			return (&rerunWorker{f: f}).Work(ctx, job)
		}
		goneOrUnavailable(fake, 31)

		t.Run("the run is gone", func(t *testing.T) {
			scheduled(t, f, 31, time.Now().Add(-time.Hour))
			_ = work(31, 1)
			ep := checkoutEpisode(t, f, 31)
			if ep.State != StateAlerted || !strings.Contains(ep.Decision.Reason, "Not Found") {
				t.Errorf("state %s: %s; want an alert that quotes GitHub", ep.State, ep.Decision.Reason)
			}
		})
		t.Run("GitHub fails until the last attempt", func(t *testing.T) {
			scheduled(t, f, 32, time.Now().Add(-time.Hour))
			if err := work(32, 1); err == nil {
				t.Fatal("a 503 on the first attempt is not retried")
			}
			if ep, _, _ := getEpisode(ctx, f.deps.DB.Read, "acme/checkout", 32); ep.State != StateRetryScheduled {
				t.Fatalf("state %s after the first attempt, want retry_scheduled: River tries again", ep.State)
			}
			_ = work(32, jobAttempts)
			ep := checkoutEpisode(t, f, 32)
			if ep.State != StateAlerted || !strings.Contains(ep.Decision.Reason, "Service Unavailable") {
				t.Errorf("state %s: %s; want an alert that says what GitHub answered", ep.State, ep.Decision.Reason)
			}
			if n := countJobs(t, f, "recovery_alert"); n != 2 {
				t.Errorf("alert jobs = %d, want one per episode", n)
			}
		})
	})
}

// firedAfterAPersonsRerun has a person re-run attempt 1 of run id on
// GitHub (attempt 2 then ends with conclusion; "" leaves it running),
// stores the episode scheduled for ripcord's first retry and fires that
// retry. It returns the episode as scheduled and as the firing left it,
// and the check-run jobs the firing queued; ripcord re-running the run
// itself is an error.
func firedAfterAPersonsRerun(t *testing.T, f *flow, fake *githubtest.Server, id int64, conclusion string) (ep, after Episode, checks int) {
	t.Helper()
	gh, err := f.deps.GitHub.NewInstallationClient(githubtest.InstallationID)
	if err != nil {
		t.Fatal(err)
	}
	fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: id})
	if _, err := gh.Actions.RerunFailedJobsByID(context.Background(), "acme", "checkout", id); err != nil {
		t.Fatal(err)
	}
	attempt2 := "is running"
	if conclusion != "" {
		fake.CompleteRun("acme/checkout", id, conclusion)
		attempt2 = "ran already"
	}
	before := fake.Count("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs")
	ep = scheduled(t, f, id, time.Now().Add(-time.Hour))
	checks = countJobs(t, f, "recovery_check")
	fire(t, f, id)
	after = checkoutEpisode(t, f, id)
	if n := fake.Count("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs") - before; n != 0 {
		t.Errorf("re-runs = %d, want none: attempt 2 %s", n, attempt2)
	}
	return ep, after, countJobs(t, f, "recovery_check") - checks
}

// Webhooks arrive out of order: the success of a re-run a person started
// comes before the failure of the attempt it re-ran, finds no episode to
// close, and that failure then schedules a retry. When the retry falls due
// the run has moved past it: the episode ends with the later attempt's
// outcome instead of waiting for ever ("Retry 1 of 3", in progress).
func TestScheduledRetryFindsALaterAttemptThatEnded(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, _ := rerunFixture(t, dbURL)
		ctx := context.Background()
		for _, c := range []struct {
			id         int64
			conclusion string
			want       State
		}{
			{41, "success", StateRecovered},
			{42, "cancelled", StateStopped},
			{43, "failure", StateRetryScheduled}, // its own delivery decides it
		} {
			t.Run(c.conclusion, func(t *testing.T) {
				// A person re-runs attempt 1, and attempt 2 ends.
				ep, after, checks := firedAfterAPersonsRerun(t, f, fake, c.id, c.conclusion)
				if after.State != c.want {
					t.Errorf("state %s (attempt %d), want %s", after.State, after.RunAttempt, c.want)
				}
				if c.want == ep.State {
					return
				}
				if after.RunAttempt != 2 {
					t.Errorf("run attempt %d, want 2", after.RunAttempt)
				}
				if checks != 1 {
					t.Errorf("check-run jobs queued = %d, want 1 to show the end", checks)
				}
				events, err := f.deps.Records.Audit(ctx, records.AuditFilter{ReleaseID: after.AlertKey()})
				if err != nil {
					t.Fatal(err)
				}
				if len(events) != 1 || !strings.Contains(events[0].Message, "attempt 2") {
					t.Errorf("audit = %+v, want one event that names attempt 2", events)
				}
			})
		}
	})
}

// /ripcord retry answered "Re-running…" at once; when the job then cannot
// re-run (GitHub no longer shows the run, or fails through the job's last
// attempt), the person is told, not left to wait for a run that never
// starts.
func TestCommandReRunThatCannotBeCarriedOutIsAnswered(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, _ := rerunFixture(t, dbURL)
		ctx := context.Background()
		work := func(id int64, attempt int) error {
			job := &river.Job[CommandRerunArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: attempt, MaxAttempts: jobAttempts},
				Args: CommandRerunArgs{Repository: "acme/checkout", RunID: id, Attempt: 1, InstallationID: githubtest.InstallationID,
					PullRequest: 3, CommentID: 900 + id}}
			return (&commandRerunWorker{f: f}).Work(ctx, job)
		}
		replies := func() []string {
			t.Helper()
			rows, err := f.deps.DB.Read.Query(`SELECT args FROM river_job WHERE kind = 'comment_reply' ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var args []byte
				if err := rows.Scan(&args); err != nil {
					t.Fatal(err)
				}
				out = append(out, string(args))
			}
			return out
		}
		goneOrUnavailable(fake, 51)

		t.Run("the run is gone", func(t *testing.T) {
			if err := work(51, 1); err == nil {
				t.Error("the job ended without an error")
			}
			got := replies()
			if len(got) != 1 || !strings.Contains(got[0], "run 51") || !strings.Contains(got[0], "Not Found") {
				t.Errorf("replies = %q, want one that says GitHub does not find run 51", got)
			}
		})
		t.Run("GitHub fails until the last attempt", func(t *testing.T) {
			before := len(replies())
			if err := work(52, 1); err == nil {
				t.Fatal("a 503 on the first attempt is not retried")
			}
			if n := len(replies()) - before; n != 0 {
				t.Fatalf("replies = %d after the first attempt, want none yet: River tries again", n)
			}
			if err := work(52, jobAttempts); err == nil {
				t.Error("the last attempt ended without an error")
			}
			got := replies()[before:]
			if len(got) != 1 || !strings.Contains(got[0], "run 52") || !strings.Contains(got[0], "Service Unavailable") {
				t.Errorf("replies = %q, want one that says what GitHub answered", got)
			}
		})
	})
}

// A person re-ran the run before the scheduled retry fell due, and that
// attempt is still running when it does: ripcord does not re-run, and the
// check run stops saying "Retry 1 of 3 at <a time now past>"; it says it
// waits for the person's re-run, whose outcome then decides.
func TestScheduledRetryWaitsForARerunAPersonStarted(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, fake, clock := rerunFixture(t, dbURL)
		const id = 44
		ep, after, checks := firedAfterAPersonsRerun(t, f, fake, id, "")
		if v := RenderCheck(ep); !strings.HasPrefix(v.Title, "Retry 1 of") {
			t.Fatalf("setup: check run %q", v.Title)
		}
		v := RenderCheck(after)
		if v.Status != "in_progress" || v.Title != "Waiting for the re-run a person started (attempt 2)" {
			t.Errorf("check run %s %q, want in_progress, waiting for the person's attempt 2", v.Status, v.Title)
		}
		if strings.Contains(v.Summary, "next retry") || !strings.Contains(v.Summary, "ripcord waits for attempt 2") {
			t.Errorf("summary still announces a retry, or does not say it waits for attempt 2:\n%s", v.Summary)
		}
		if checks != 1 {
			t.Errorf("check-run jobs queued = %d, want 1 to show the wait", checks)
		}
		// Attempt 2's own delivery still decides: it is not taken for handled.
		if _, ok := after.Fail(Failure{Attempt: 2, Decision: ep.Decision, Context: ep.Context, At: clock.Now()}); !ok {
			t.Error("attempt 2's failure would be refused")
		}
		if _, ok := after.Succeed(2, clock.Now()); !ok {
			t.Error("attempt 2's success would be refused")
		}
		// Fired again (River retrying the job): nothing more happens.
		fire(t, f, id)
		if again := checkoutEpisode(t, f, id); again.Seq != after.Seq {
			t.Errorf("seq %d after a second firing, want %d", again.Seq, after.Seq)
		}
	})
}
