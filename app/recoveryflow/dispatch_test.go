package recoveryflow

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/recovery"
	"github.com/ripcord/ripcord/repoconfig"
)

// losesDispatchAnswers sends a workflow dispatch to GitHub and, while lose
// is set, throws its answer away, as a connection that drops after GitHub
// acted does; while drop is set it fails the dispatch without sending it,
// as a connection that drops before GitHub got the request does.
type losesDispatchAnswers struct {
	mu         sync.Mutex
	lose, drop bool
}

func (l *losesDispatchAnswers) set(lose bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lose = lose
}

func (l *losesDispatchAnswers) setDrop(drop bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop = drop
}

func (l *losesDispatchAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	lose, drop := l.lose, l.drop
	l.mu.Unlock()
	isDispatch := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/dispatches")
	if drop && isDispatch {
		return nil, errors.New("connection reset by peer")
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !lose || !isDispatch {
		return resp, err
	}
	resp.Body.Close()
	return nil, errors.New("connection reset by peer")
}

// checkoutEpisode reads the episode of acme/checkout's run id.
func checkoutEpisode(t *testing.T, f *flow, id int64) Episode {
	t.Helper()
	ep, _, err := getEpisode(context.Background(), f.deps.DB.Read, "acme/checkout", id)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// rollingBack stores an episode of run id whose retries are spent and
// whose decision rolls back to v1 by dispatching deploy.yml.
func rollingBack(t *testing.T, f *flow, id int64) Episode {
	t.Helper()
	rb := repoconfig.Rollback{Mode: repoconfig.ModeWorkflow, Workflow: "deploy.yml", Input: "version"}
	in := recovery.Input{Now: f.deps.Now(), RetryCount: 1, Policy: recovery.Policy{MaxRetries: 0}, FailureType: "health_check_failure",
		Run: recovery.Run{ID: id, Completed: true, Attempt: 1, CreatedAt: f.deps.Now()}, FailedVersion: "v2",
		Previous: &recovery.Target{ReleaseID: "checkout-v1", Version: "v1", Eligible: true, Evidence: "healthy"},
		Live:     recovery.Live{Known: true, Version: "v2"}, RollbackMode: rb.Mode, AvailableModes: []string{rb.Mode}}
	ep := Episode{Repository: "acme/checkout", RunID: id, InstallationID: githubtest.InstallationID, HeadSHA: "abc", App: "checkout",
		Environment: "staging"}
	ep, _ = ep.Fail(Failure{Attempt: 1, Decision: recovery.Decide(in), Context: Context{Input: in,
		Config: Applied{RollbackMode: rb.Mode, Rollback: rb}}, At: f.deps.Now()})
	if ep.State != StateRollingBack {
		t.Fatalf("setup: %s (%s)", ep.State, ep.Decision.Reason)
	}
	if err := f.deps.DB.InTx(context.Background(), func(tx *sql.Tx) error { return saveEpisode(context.Background(), tx, ep, 0) }); err != nil {
		t.Fatal(err)
	}
	return ep
}

func dispatchJob(f *flow, id int64, attempt int) error {
	job := &river.Job[DispatchArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: attempt, MaxAttempts: dispatchAttempts},
		Args: DispatchArgs{Key: RunKey("acme/checkout", id) + "/1", Repository: "acme/checkout", Workflow: "deploy.yml", Input: "version",
			Version: "v1", EpisodeRepository: "acme/checkout", RunID: id, Attempt: 1, InstallationID: githubtest.InstallationID}}
	return (&dispatchWorker{f: f}).Work(context.Background(), job)
}

// A rollback dispatch is not idempotent on GitHub's side: a job that runs
// again after GitHub acted on its dispatch (the answer was lost, or the run
// could not be stored) follows the run GitHub started instead of starting
// a second rollback; GitHub answering without the run's id is followed the
// same way instead of "Rolling back" for ever.
func TestRollbackDispatchIsSentOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		fake := githubtest.NewServer(t)
		lossy := &losesDispatchAnswers{}
		f := workerFlow(t, dbURL, fake, ghclient.NewStepClock(time.Now().UTC()), lossy)
		fake.PutFile("acme/checkout", "main", "README.md", "checkout")

		t.Run("the answer is lost: the retried job follows the run", func(t *testing.T) {
			rollingBack(t, f, 61)
			before := len(fake.Dispatches("acme/checkout"))
			lossy.set(true)
			if err := dispatchJob(f, 61, 1); err == nil {
				t.Fatal("a dispatch whose answer was lost ended the job")
			}
			lossy.set(false)
			if err := dispatchJob(f, 61, 2); err != nil {
				t.Fatalf("second attempt: %v", err)
			}
			ds := fake.Dispatches("acme/checkout")[before:]
			if len(ds) != 1 {
				t.Fatalf("dispatches = %d, want 1: the rollback was started twice", len(ds))
			}
			if ep := checkoutEpisode(t, f, 61); ep.State != StateRollingBack || ep.RollbackRunID != ds[0].RunID {
				t.Errorf("state %s, rollback run %d; want rolling_back, following run %d", ep.State, ep.RollbackRunID, ds[0].RunID)
			}
		})
		t.Run("GitHub answers without the run's id", func(t *testing.T) {
			fake.IgnoreRunDetails("acme/checkout")
			rollingBack(t, f, 62)
			before := len(fake.Dispatches("acme/checkout"))
			var snooze *river.JobSnoozeError
			if err := dispatchJob(f, 62, 1); !errors.As(err, &snooze) {
				t.Fatalf("first attempt: %v, want a snooze to look for the run", err)
			}
			if err := dispatchJob(f, 62, 1); err != nil {
				t.Fatalf("after the snooze: %v", err)
			}
			ds := fake.Dispatches("acme/checkout")[before:]
			if len(ds) != 1 {
				t.Fatalf("dispatches = %d, want 1", len(ds))
			}
			if ep := checkoutEpisode(t, f, 62); ep.State != StateRollingBack || ep.RollbackRunID != ds[0].RunID {
				t.Errorf("state %s, rollback run %d; want rolling_back, following run %d", ep.State, ep.RollbackRunID, ds[0].RunID)
			}
		})
		t.Run("the answer is lost and a person dispatched too: an alert, not a second rollback", func(t *testing.T) {
			rollingBack(t, f, 63)
			before := len(fake.Dispatches("acme/checkout"))
			lossy.set(true)
			if err := dispatchJob(f, 63, 1); err == nil {
				t.Fatal("a dispatch whose answer was lost ended the job")
			}
			lossy.set(false)
			fake.AddWorkflowRun("acme/checkout", githubtest.WorkflowRun{ID: 6300, Path: ".github/workflows/deploy.yml",
				Event: "workflow_dispatch", Status: "queued"})
			_ = dispatchJob(f, 63, 2)
			if n := len(fake.Dispatches("acme/checkout")) - before; n != 1 {
				t.Errorf("dispatches = %d, want 1", n)
			}
			ep := checkoutEpisode(t, f, 63)
			if ep.State != StateAlerted || ep.Decision.Rule != RuleRollbackFailed || !strings.Contains(ep.Decision.Reason, "6300") {
				t.Errorf("state %s, rule %s: %s; want rollback_failed naming the runs", ep.State, ep.Decision.Rule, ep.Decision.Reason)
			}
		})
	})
}

// GitHub may list a dispatched run some seconds after it accepted the
// dispatch: a retried job that finds no run yet must not take that for
// "GitHub did not act" and start a second rollback. It sends again only
// once the grace has passed with no run listed.
func TestARetriedDispatchWaitsForGitHubToListItsRun(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		fake := githubtest.NewServer(t)
		lossy := &losesDispatchAnswers{}
		clock := ghclient.NewStepClock(time.Now().UTC())
		f := workerFlow(t, dbURL, fake, clock, lossy)
		fake.PutFile("acme/checkout", "main", "README.md", "checkout")
		rollingBack(t, f, 64)
		before := len(fake.Dispatches("acme/checkout"))
		lossy.setDrop(true)
		if err := dispatchJob(f, 64, 1); err == nil {
			t.Fatal("a dispatch that never reached GitHub ended the job")
		}
		lossy.setDrop(false)
		var snooze *river.JobSnoozeError
		if err := dispatchJob(f, 64, 2); !errors.As(err, &snooze) {
			t.Fatalf("retried job: %v, want a snooze while GitHub may not list the run yet", err)
		}
		if n := len(fake.Dispatches("acme/checkout")) - before; n != 0 {
			t.Fatalf("dispatches = %d before the grace, want none: a run GitHub lists late would be a second rollback", n)
		}
		_ = clock.Sleep(context.Background(), dispatchGrace+time.Second)
		if err := dispatchJob(f, 64, 3); err != nil {
			t.Fatalf("after the grace: %v", err)
		}
		ds := fake.Dispatches("acme/checkout")[before:]
		if len(ds) != 1 {
			t.Fatalf("dispatches = %d after the grace, want 1", len(ds))
		}
		if ep := checkoutEpisode(t, f, 64); ep.State != StateRollingBack || ep.RollbackRunID != ds[0].RunID {
			t.Errorf("state %s, rollback run %d; want rolling_back, following run %d", ep.State, ep.RollbackRunID, ds[0].RunID)
		}
	})
}
