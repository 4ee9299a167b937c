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

// asking is what one tick learns from GitHub as it asks about a
// rollout's runs, in adoption (adopt.go) and in the run polls.
type asking struct {
	unread   map[Ref]bool      // the runs GitHub gave no answer about
	limit    installationLimit // the installation's rate limit, as stored
	limited  bool              // met on this tick: nothing more is asked
	answered bool              // GitHub answered a request about the runs
}

// pollRuns adopts the runs of batches left dispatching and, when asked
// to poll, asks GitHub about the rollout's runs in flight and stores what
// moved, as their events would. It returns the runs GitHub gave no answer
// about and, while the installation's rate limit holds, its reset: no
// request is sent before it (ratewait.go), and the rollout's next poll is
// then.
func (x *executor) pollRuns(ctx context.Context, id string, poll bool) (map[Ref]bool, time.Time, error) {
	r, err := getRollout(ctx, x.deps.DB.Read, id)
	if err != nil {
		return nil, time.Time{}, err
	}
	runs, err := loadRuns(ctx, x.deps.DB.Read, id)
	if err != nil {
		return nil, time.Time{}, err
	}
	lim, err := readLimit(ctx, x.deps.DB.Read, r.InstallationID)
	if err != nil {
		return nil, time.Time{}, err
	}
	a := &asking{unread: map[Ref]bool{}, limit: lim}
	now := x.deps.Now()
	// A run still queued past its queue_timeout is asked about on any
	// tick: it fails its pass only if GitHub says it still waits (or its
	// event said so last); one GitHub gives no answer about is unread.
	polls := (poll || overdue(runs, r.Snapshot.Settings.QueueTimeout, now)) && inFlight(runs)
	if lim.holds(now) {
		return a.unread, lim.reset, x.waitForReset(ctx, r, runs, polls, a)
	}
	if err := x.adoptRuns(ctx, r, runs, a); err != nil {
		return nil, time.Time{}, err
	}
	if polls {
		// After a rate limit met in adoption, no run is asked about.
		if err := x.askRuns(ctx, r, runs, a); err != nil {
			return nil, time.Time{}, err
		}
	}
	if a.limited {
		return a.unread, a.limit.reset, nil
	}
	if a.answered && !lim.reset.IsZero() {
		if err := x.limitLifted(ctx, r.InstallationID); err != nil {
			return nil, time.Time{}, err
		}
	}
	return a.unread, time.Time{}, nil
}

// waitForReset leaves the runs a tick would ask GitHub about unread, the
// installation's rate limit holding (a.limit) since an earlier tick, maybe
// another rollout's, and says so once in the rollout's audit if there
// were any.
func (x *executor) waitForReset(ctx context.Context, r Rollout, runs map[Ref]Run, polls bool, a *asking) error {
	now := x.deps.Now()
	for ref, run := range runs {
		if toAdopt(run, now) || polls && toPoll(run) {
			a.unread[ref] = true
		}
	}
	if len(a.unread) == 0 {
		return nil
	}
	return x.sayLimited(ctx, r, a.limit)
}

// toPoll reports whether a poll asks GitHub about run: it was dispatched
// and has not ended.
func toPoll(run Run) bool {
	return run.RunID != 0 && (run.State == RunQueued || run.State == RunInProgress)
}

// askRuns asks GitHub about each of the rollout's runs in flight and
// stores what moved. A run GitHub gives no answer about is added to
// a.unread; on a rate limit nothing more is asked (a.limited).
func (x *executor) askRuns(ctx context.Context, r Rollout, runs map[Ref]Run, a *asking) error {
	gh, err := x.deps.GitHub.NewInstallationClient(r.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", r.InstallationID, err)
	}
	p := &poller{x: x, gh: gh, r: r, a: a}
	p.owner, p.name, _ = strings.Cut(r.Repository, "/")
	for ref, run := range runs {
		if !toPoll(run) {
			continue
		}
		if p.tokenless || a.limited {
			a.unread[ref] = true
			continue
		}
		if err := p.ask(ctx, ref, run); err != nil {
			return err
		}
	}
	return nil
}

// poller is one poll of a rollout's runs.
type poller struct {
	x           *executor
	gh          *github.Client
	r           Rollout
	owner, name string
	a           *asking
	// lost: the repository's answer, asked once per poll whatever the
	// number of runs that got a 404; nil: not asked.
	lost *bool
	// tokenless: without a token no run can be asked about on this
	// tick, and the runs not asked yet are unread too.
	tokenless bool
}

// ask asks GitHub about one run and stores what moved.
func (p *poller) ask(ctx context.Context, ref Ref, run Run) error {
	x, id := p.x, p.r.ID
	wr, resp, err := p.gh.Actions.GetWorkflowRunByID(ctx, p.owner, p.name, run.RunID)
	if err != nil && ctx.Err() == nil {
		if until, ok := rateLimited(err, x.deps.Now()); ok {
			// GitHub said "later" (on the run, or on the installation's
			// token): nothing of the run is known, and no run is asked
			// about before the reset.
			p.a.unread[ref] = true
			return x.limitMet(ctx, p.a, p.r, until, err)
		}
		// The installation was deleted or suspended, or GitHub did not
		// answer for its token: nothing is known of the run, so its
		// batch is left as it was (no on_failure, no queue_timeout).
		var terr error
		if p.tokenless, terr = x.noToken(ctx, p.r, err, runsNotRead(p.r)); terr != nil || p.tokenless {
			p.a.unread[ref] = true
			return terr
		}
	}
	var next, detail string
	switch {
	case err != nil && resp != nil && resp.StatusCode == http.StatusNotFound:
		// GitHub answers 404 for a deleted run, and for every run of a
		// repository the App can no longer read (removed from the
		// installation). Only the repository's own answer tells them
		// apart.
		p.a.answered = true
		known, lost, err := p.accessLost(ctx, run)
		if err != nil || !known || lost {
			// Nothing is known of the run: its batch is left as it was,
			// the rollout where it is (no on_failure, no queue_timeout),
			// until access is back, or the repository answers.
			p.a.unread[ref] = true
			if err != nil || !lost {
				return err
			}
			return x.reportAccessLost(ctx, p.r, ref, run)
		}
		// The run was deleted: it will never end, and its event never
		// come. It counts as a failed run of its batch, so the rollout
		// moves on (on_failure) rather than every tick failing for ever.
		next, detail = RunFailure, "deleted on GitHub (404 on its run)"
	case err != nil:
		// Any other error (5xx, no answer) says nothing about the run:
		// its batch is left as it was and asked about again on the next
		// poll (the rollout has a run in flight, so the tick schedules
		// one). The other runs are still read, and the machine still
		// moves on what they say: an outage of one request fails no
		// batch and holds none back.
		if err := ctx.Err(); err != nil {
			return err
		}
		x.deps.Log.Warn("rollout run not read: asked again on the next poll", "rollout", id,
			"run_id", run.RunID, "error", err)
		p.a.unread[ref] = true
		return nil
	default:
		p.a.answered = true
		next, detail = runState(wr)
	}
	if !moves(run.State, next) {
		return nil
	}
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		return setBatch(ctx, tx, id, ref, run.RunID, next, detail, x.deps.Now())
	})
}

// accessLost reports, after a 404 on run, whether the App can no longer
// read the repository (asked once per poll); known is false when the
// repository did not answer: the run is asked about again on the next
// poll, and the repository too (after the reset, for a rate limit).
func (p *poller) accessLost(ctx context.Context, run Run) (known, lost bool, err error) {
	if p.lost != nil {
		return true, *p.lost, nil
	}
	x := p.x
	l, err := x.accessLost(ctx, p.gh, p.owner, p.name)
	if err != nil {
		if until, ok := rateLimited(err, x.deps.Now()); ok {
			return false, false, x.limitMet(ctx, p.a, p.r, until, err)
		}
		x.deps.Log.Warn("rollout run 404 and its repository not read: asked again on the next poll",
			"rollout", p.r.ID, "run_id", run.RunID, "error", err)
		return false, false, nil
	}
	p.lost = &l
	return true, l, nil
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
