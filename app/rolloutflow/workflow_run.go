package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
)

// runHandler follows the runs the executor dispatched: a workflow_run
// event of one of them updates its batch and wakes the rollout.
type runHandler struct {
	x *executor
	// afterDispatchingRead, when set (by tests), runs between the two
	// reads of Handle.
	afterDispatchingRead func()
}

func (runHandler) Handles() []string { return []string{"workflow_run"} }

func (h runHandler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.WorkflowRunEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("decode workflow_run event: %w", err))
	}
	run := ev.GetWorkflowRun()
	repo := ev.GetRepo().GetFullName()
	// Whether a batch is being dispatched is read first: a batch is
	// claimed (dispatching) before GitHub is asked, and its run's id is
	// stored after, so if none was dispatching then, the run's batch, if
	// any, already has its id. Read in the other order, a dispatch could
	// store the id between the two reads and its event be ignored.
	dispatching, err := isDispatching(ctx, h.x.deps.DB.Read, repo)
	if err != nil {
		return nil, err
	}
	if h.afterDispatchingRead != nil {
		h.afterDispatchingRead()
	}
	id, ref, state, ok, err := batchOfRun(ctx, h.x.deps.DB.Read, repo, run.GetID())
	if err == nil && !ok && dispatching {
		err = fmt.Errorf("workflow run %d of %s is not known yet and a batch is being dispatched there: trying again", run.GetID(), repo)
	}
	if err != nil || !ok || ref.Kind == KindProbe {
		// A probe workflow's run is judged by the results it posts
		// (probes.go), not by how it ends.
		return nil, err
	}
	next, detail := runState(run)
	if !moves(state, next) {
		return nil, nil // nothing new, or the batch is settled already
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		if err := setBatch(ctx, tx, id, ref, run.GetID(), next, detail, h.x.deps.Now()); err != nil {
			return err
		}
		return queueTickTx(ctx, tx, h.x.deps.River(), id)
	}, nil
}

// isDispatching reports whether a batch of the repository is being
// dispatched. GitHub answers a dispatch with the run's id, and the executor
// stores it in the transaction after; the run's first events can be sent,
// and worked, in between. Such an event fails and is retried with backoff,
// by when the id is stored; an event of an unrelated run costs a retry or
// two and is then ignored.
func isDispatching(ctx context.Context, q querier, repository string) (bool, error) {
	var dispatching bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM rollout_batches b JOIN rollouts r ON r.id = b.rollout_id
		WHERE r.repository = $1 AND b.state = $2)`, repository, RunDispatching).Scan(&dispatching)
	if err != nil {
		return false, fmt.Errorf("look for batches being dispatched: %w", err)
	}
	return dispatching, nil
}

// runState maps a run's status to its batch's state; "" leaves it.
func runState(run *github.WorkflowRun) (string, string) {
	switch run.GetStatus() {
	case "completed":
		if run.GetConclusion() == "success" {
			return RunSuccess, ""
		}
		return RunFailure, "conclusion " + run.GetConclusion()
	case "in_progress":
		return RunInProgress, ""
	case "queued", "requested", "waiting", "pending":
		return RunQueued, ""
	}
	return "", ""
}

// runRank orders a run's states: events arrive out of order and a poll may
// see an older state than an event did, but a batch never goes back.
var runRank = map[string]int{RunDispatching: 0, RunQueued: 1, RunInProgress: 2, RunSuccess: 3, RunFailure: 3}

func moves(from, to string) bool { return to != "" && runRank[to] > runRank[from] }

// pollRuns adopts the runs of batches left dispatching and, when asked
// to poll, asks GitHub about the rollout's runs in flight and stores what
// moved, as their events would. It returns the runs GitHub gave no answer
// about.
func (x *executor) pollRuns(ctx context.Context, id string, poll bool) (map[Ref]bool, error) {
	r, err := getRollout(ctx, x.deps.DB.Read, id)
	if err != nil {
		return nil, err
	}
	runs, err := loadRuns(ctx, x.deps.DB.Read, id)
	if err != nil {
		return nil, err
	}
	unread := map[Ref]bool{}
	if err := x.adoptRuns(ctx, r, runs, unread); err != nil {
		return nil, err
	}
	// A run still queued past its queue_timeout is asked about on any
	// tick: it fails its pass only if GitHub says it still waits (or its
	// event said so last); one GitHub gives no answer about is unread.
	if !poll && !overdue(runs, r.Snapshot.Settings.QueueTimeout, x.deps.Now()) || !inFlight(runs) {
		return unread, nil
	}
	gh, err := x.deps.GitHub.NewInstallationClient(r.InstallationID)
	if err != nil {
		return nil, fmt.Errorf("github client for installation %d: %w", r.InstallationID, err)
	}
	owner, name, _ := strings.Cut(r.Repository, "/")
	// The repository's answer is asked once per poll, whatever the number
	// of runs that got a 404.
	var lost *bool
	// Without a token no run can be asked about on this tick: the runs
	// not asked yet are unread too.
	tokenless := false
	for ref, run := range runs {
		if run.RunID == 0 || (run.State != RunQueued && run.State != RunInProgress) {
			continue
		}
		if tokenless {
			unread[ref] = true
			continue
		}
		wr, resp, err := gh.Actions.GetWorkflowRunByID(ctx, owner, name, run.RunID)
		if err != nil && ctx.Err() == nil {
			// The installation was deleted or suspended, or GitHub did not
			// answer for its token: nothing is known of the run, so its
			// batch is left as it was (no on_failure, no queue_timeout).
			var terr error
			if tokenless, terr = x.noToken(ctx, r, err, runsNotRead(r)); terr != nil {
				return nil, terr
			}
			if tokenless {
				unread[ref] = true
				continue
			}
		}
		var next, detail string
		switch {
		case err != nil && resp != nil && resp.StatusCode == http.StatusNotFound:
			// GitHub answers 404 for a deleted run, and for every run
			// of a repository the App can no longer read (removed
			// from the installation). Only the repository's own
			// answer tells them apart.
			if lost == nil {
				l, rerr := x.accessLost(ctx, gh, owner, name)
				if rerr != nil {
					x.deps.Log.Warn("rollout run 404 and its repository not read: asked again on the next poll",
						"rollout", id, "run_id", run.RunID, "error", rerr)
					unread[ref] = true
					continue
				}
				lost = &l
			}
			if *lost {
				// Nothing is known of the run: its batch is left as
				// it was, the rollout where it is (no on_failure, no
				// queue_timeout), until access is back.
				if err := x.reportAccessLost(ctx, r, ref, run); err != nil {
					return nil, err
				}
				unread[ref] = true
				continue
			}
			// The run was deleted: it will never end, and its event
			// never come. It counts as a failed run of its batch, so
			// the rollout moves on (on_failure) rather than every
			// tick failing for ever.
			next, detail = RunFailure, "deleted on GitHub (404 on its run)"
		case err != nil:
			// Any other error (5xx, no answer) says nothing about the
			// run: its batch is left as it was and asked about again
			// on the next poll (the rollout has a run in flight, so
			// the tick schedules one). The other runs are still read,
			// and the machine still moves on what they say: an outage
			// of one request fails no batch and holds none back.
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			x.deps.Log.Warn("rollout run not read: asked again on the next poll", "rollout", id,
				"run_id", run.RunID, "error", err)
			unread[ref] = true
			continue
		default:
			next, detail = runState(wr)
		}
		if !moves(run.State, next) {
			continue
		}
		err = x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
			return setBatch(ctx, tx, id, ref, run.RunID, next, detail, x.deps.Now())
		})
		if err != nil {
			return nil, err
		}
	}
	return unread, nil
}

// runsNotRead is a rollout's access-lost line while GitHub refuses the App
// a token (why) and its runs cannot be asked about.
func runsNotRead(r Rollout) func(why string) string {
	return func(why string) string {
		return fmt.Sprintf("runs of %s not read: %s: their batches are left as they were, the rollout where it is, "+
			"until access is back", r.Repository, why)
	}
}

// accessLost reports whether the App can no longer read the repository
// owner/name: GitHub answers 404 for it. An answer that says neither (5xx,
// none) is an error.
func (x *executor) accessLost(ctx context.Context, gh *github.Client, owner, name string) (bool, error) {
	_, resp, err := gh.Repositories.Get(ctx, owner, name)
	switch {
	case err == nil:
		return false, nil
	case resp != nil && resp.StatusCode == http.StatusNotFound:
		return true, nil
	}
	return false, fmt.Errorf("repository %s/%s: %w", owner, name, err)
}

// reportAccessLost makes a run of a repository the App lost access to
// visible: a log line on every poll, and, the first time, the batch's
// detail and an access-lost line in the rollout's audit.
func (x *executor) reportAccessLost(ctx context.Context, r Rollout, ref Ref, run Run) error {
	msg := fmt.Sprintf("workflow run %d: GitHub answers 404 on it and on %s, which the App can no longer read "+
		"(removed from the installation?): the batch is left as it was until access is back", run.RunID, r.Repository)
	x.deps.Log.Warn("rollout run not read: no access to its repository", "rollout", r.ID, "repository", r.Repository,
		"run_id", run.RunID)
	if run.Detail == msg {
		return nil
	}
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := setBatch(ctx, tx, r.ID, ref, run.RunID, run.State, msg, x.deps.Now()); err != nil {
			return err
		}
		// No check run update: the App cannot write to the repository.
		return insertAudit(ctx, tx, r.ID, x.deps.Now(), "access-lost", msg)
	})
}

// overdue reports whether a run the machine would fail for its
// queue_timeout has an id GitHub can be asked about.
func overdue(runs map[Ref]Run, queueTimeout time.Duration, now time.Time) bool {
	for _, r := range runs {
		if r.RunID != 0 && r.State == RunQueued && !now.Before(r.DispatchedAt.Add(queueTimeout)) {
			return true
		}
	}
	return false
}

// OwnsRun reports whether runID in repository is a batch a rollout
// dispatched: the rollout decides what its failure means (on_failure), so
// recovery should leave it alone.
func OwnsRun(ctx context.Context, db *sql.DB, repository string, runID int64) (bool, error) {
	_, _, _, ok, err := batchOfRun(ctx, db, repository, runID)
	return ok, err
}
