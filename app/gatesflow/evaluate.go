package gatesflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/gates/attest"
	"github.com/ripcord/ripcord/repoconfig"
)

// DefaultBranches are the release branches gates run on when gates.branches is unset.
var DefaultBranches = []string{"release-*"}

// evaluateAttempts: with the 1 s base doubling, an evaluation gives up after
// about 2 minutes of failures, as a delivery does, not after 15 s: a short
// GitHub hiccup must not fail every gate it meets (a give-up fails closed).
const evaluateAttempts = 8

// errLostAttempt is why a job gives up at its attempt beyond the budget of
// its work (evaluateAttempts, reportAttempts): that is run only when the
// last attempt of the budget neither ended nor failed, its process lost
// (a crash, a node gone). River's rescuer discards a job it finds so at
// its MaxAttempts without running it again (on PostgreSQL; SQLite's start
// makes it available again), so each such job is queued with one attempt
// more than its work uses, and that attempt only does the giving up (lost;
// the give-up's own job, which nothing would follow, does its work again).
// The budget is the smaller of the work's and the job's MaxAttempts
// (budget): a job queued before the spare attempt existed (MaxAttempts 8,
// or 5 for the oldest evaluations) gives up at its own last attempt rather
// than being discarded with its runs spinning. PostgreSQL's migration
// 00020 gave those jobs the spare attempt (00021 the give-ups'); SQLite's
// cannot, and its start runs a lost job again whatever its MaxAttempts.
var errLostAttempt = errors.New("the ripcord process running it stopped before it ended")

// budget is the number of attempts a job's work gets: work's (the
// constant it is queued with, less the spare attempt), or fewer when the
// job was queued with fewer (before the spare attempt existed).
func budget(work, maxAttempts int) int { return min(work, maxAttempts) }

// EvaluateArgs evaluates the gates of one PR head. Unique by args, so a
// redelivered webhook never evaluates twice; Trigger keeps a re-run click
// distinct from the push that first ran the gates.
type EvaluateArgs struct {
	Repository     string `json:"repository" river:"unique"`
	PullRequest    int    `json:"pull_request" river:"unique"`
	HeadSHA        string `json:"head_sha" river:"unique"`
	Trigger        string `json:"trigger" river:"unique"`
	InstallationID int64  `json:"installation_id"`
	// Label is the label a labeled or unlabeled event added or removed,
	// Edited what an edited event changed (editedBody, editedBase): the
	// job evaluates only the environments whose gates that can change.
	Label  string `json:"label,omitempty"`
	Edited string `json:"edited,omitempty"`
	// CheckRunID is the gate run a Re-run was clicked on (ripcord's own):
	// when the pull request's head has moved past the run's commit, the
	// run is answered rather than evaluated again (oldHead).
	CheckRunID int64 `json:"check_run_id,omitempty"`
}

// What an edited pull request changed, for EvaluateArgs.Edited.
const (
	editedBody = "body"
	editedBase = "base"
)

// Kind names the job in the queue.
func (EvaluateArgs) Kind() string { return "gates_evaluate" }

func queueEvaluate(ctx context.Context, tx *sql.Tx, d pipeline.Deps, a EvaluateArgs) error {
	_, err := d.River().InsertTx(ctx, tx, a, &river.InsertOpts{MaxAttempts: evaluateAttempts + 1, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return fmt.Errorf("queue gates of %s#%d@%s: %w", a.Repository, a.PullRequest, a.HeadSHA, err)
	}
	return nil
}

type evaluateWorker struct {
	river.WorkerDefaults[EvaluateArgs]
	deps     pipeline.Deps
	loader   *configload.Loader
	registry attest.Source
	// slowAfter is how long a slow gate (one that reaches a registry)
	// may take before its check run is shown in_progress. A quicker
	// verdict, a cached one for instance, is the gate's one check-run
	// write.
	slowAfter time.Duration
	timeout   time.Duration // bounds an evaluation job
}

func (w *evaluateWorker) Timeout(*river.Job[EvaluateArgs]) time.Duration { return w.timeout }

func (w *evaluateWorker) Work(ctx context.Context, job *river.Job[EvaluateArgs]) error {
	last := budget(evaluateAttempts, job.MaxAttempts)
	if job.Attempt > last {
		return w.lost(ctx, job, last)
	}
	known, pr, err := w.work(ctx, job)
	if snooze := pipeline.LimitSnooze(ctx, w.deps, job.Kind, err); snooze != nil {
		return snooze // GitHub said "later", not "no": not a try that failed
	}
	var cancelled *river.JobCancelError
	if err == nil || (job.Attempt < last && !errors.As(err, &cancelled)) || interrupted(w.deps, err) {
		return err
	}
	// The last try failed (or the job was cancelled): nothing will run
	// the evaluation again, and the runs it showed in progress would spin
	// for ever. They are completed as failures that say why and how to
	// evaluate again. The attempt kept for a lost one is not run.
	w.gaveUp(ctx, job, job.Attempt, err, known, pr)
	if errors.As(err, &cancelled) {
		return err
	}
	return river.JobCancel(err)
}

// interrupted reports whether err is the server's stop cancelling the job:
// River runs such a job again, the attempt not counted, so it has not
// given up.
func interrupted(d pipeline.Deps, err error) bool {
	select {
	case <-d.Stopping:
		return errors.Is(err, context.Canceled)
	default:
		return false
	}
}

// work evaluates the gates of job. known are the gates it was to report,
// once it knows them (the config and the releases read): a give-up makes
// the runs of those it never showed. pr is the pull request, once read: a
// give-up learns from it whether the head moved on without reading it
// again.
func (w *evaluateWorker) work(ctx context.Context, job *river.Job[EvaluateArgs]) (known []GateScope, pr *github.PullRequest, err error) {
	a := job.Args
	gh, err := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return nil, nil, fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	pr, cfg, targets, err := w.judged(ctx, gh, a)
	if err != nil {
		return nil, nil, err
	}
	if pr.GetHead().GetSHA() != a.HeadSHA {
		// The head moved on: the newer push has its own job. The runs
		// of the old head this evaluation showed in progress, and those
		// a Re-run was clicked on, are answered.
		return nil, pr, w.oldHead(ctx, gh, a, pr, job.ID)
	}
	known = gateScopes(cfg, targets)
	// The job's id orders this evaluation among the commit's (see
	// externalID): the queue numbers jobs in the order they were asked for,
	// and a retry keeps its job's id.
	//
	// Each environment's verdicts are queued as soon as it is judged, and
	// the job keeps which environments it queued (queuedBefore): an attempt
	// that follows one whose later environment met GitHub's rate limit (or
	// failed) judges only those not queued yet. Judged again, an environment
	// would be evaluated twice, and its verdicts, differing or not, queued
	// beside those on their way.
	done := queuedBefore(job)
	for _, t := range targets {
		scope := t.app + "/" + t.env
		if slices.Contains(done, scope) {
			continue
		}
		rs, judged, err := w.evaluate(ctx, gh, cfg, t, pr, a, job.ID)
		if err != nil {
			return known, pr, err
		}
		if len(rs) == 0 {
			continue
		}
		done = append(done, scope)
		qctx, stop := ctx, context.CancelFunc(func() {})
		if judged {
			qctx, stop = verdictContext(ctx)
		}
		err = queueVerdicts(qctx, w.deps, job.ID, rs, done)
		stop()
		if err != nil {
			return known, pr, err
		}
	}
	return known, pr, nil
}

// verdictContext is the context verdicts are queued in once judged (their
// gates began with time left): the job's, without its deadline, bounded by
// giveUpTimeout. gateContext ends the gates a margin before the job's
// deadline so that the queueing has time, but on a loaded machine the
// margin (a tenth of the timeout) can be too short, and verdicts judged and
// then lost to the deadline were judged again by the next attempt, which
// met the same deadline, while the gate's run stayed in progress
// (gatesflow's e2e_timeout_test, 2026-12-03).
// A job cancelled (the server stopping) still cancels the queueing: its
// gates were interrupted, not judged, and the next attempt judges them.
func verdictContext(ctx context.Context) (context.Context, context.CancelFunc) {
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveUpTimeout)
	interrupted := func() bool {
		err := ctx.Err()
		return err != nil && !errors.Is(err, context.DeadlineExceeded)
	}
	if interrupted() {
		cancel()
		return vctx, cancel
	}
	stop := context.AfterFunc(ctx, func() {
		if interrupted() {
			cancel()
		}
	})
	return vctx, func() { stop(); cancel() }
}

// queuedVerdicts is an evaluation job's output: the environments
// ("app/env") whose verdicts an attempt of it queued.
type queuedVerdicts struct {
	Environments []string `json:"queued_environments"`
}

// queuedBefore are the environments whose verdicts earlier attempts of job
// queued.
func queuedBefore(job *river.Job[EvaluateArgs]) []string {
	var q queuedVerdicts
	if out := job.Output(); len(out) > 0 && json.Unmarshal(out, &q) == nil {
		return q.Environments
	}
	return nil
}

// queueVerdicts queues the verdicts rs of job jobID and keeps done, the
// environments whose verdicts it has queued (rs's included), as the job's
// output, in one transaction: an attempt whose process stops in between
// leaves neither, and the next judges the environment again.
func queueVerdicts(ctx context.Context, d pipeline.Deps, jobID int64, rs []ReportArgs, done []string) error {
	return queueReportsAnd(ctx, d, rs, func(tx *sql.Tx) error {
		_, err := d.River().JobUpdateTx(ctx, tx, jobID, &river.JobUpdateParams{Output: queuedVerdicts{Environments: done}})
		if err != nil {
			return fmt.Errorf("keep the environments whose gate check runs are queued: %w", err)
		}
		return nil
	})
}

// judged reads what an attempt of a judges: the pull request, the default
// branch's config, and the environments whose release it is and whose
// gates the change that triggered a concerns. When the pull request's head
// is no longer a's, or the config does not load, there are no targets
// (cfg nil).
func (w *evaluateWorker) judged(ctx context.Context, gh *github.Client, a EvaluateArgs) (*github.PullRequest, *repoconfig.Config, []target, error) {
	owner, name := splitRepo(a.Repository)
	pr, _, err := gh.PullRequests.Get(ctx, owner, name, a.PullRequest)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read pull request %s#%d: %w", a.Repository, a.PullRequest, err)
	}
	if pr.GetHead().GetSHA() != a.HeadSHA {
		return pr, nil, nil, nil
	}
	// The default branch's config, never the PR's: a PR must not be able to
	// weaken the gates that judge it.
	res, err := w.loader.Load(ctx, gh.Repositories, a.Repository, "")
	if err != nil {
		return nil, nil, nil, err
	}
	if !res.Valid() {
		return pr, nil, nil, nil // configload's own check run reports a config that does not load
	}
	targets, err := w.releases(ctx, gh, res.Config, pr, a)
	if err != nil {
		return nil, nil, nil, err
	}
	targets = slices.DeleteFunc(targets, func(t target) bool { return !concerns(res.Config, t, a) })
	return pr, res.Config, targets, nil
}

// gateScopes names the gates of each of targets under cfg.
func gateScopes(cfg *repoconfig.Config, targets []target) []GateScope {
	var out []GateScope
	for _, t := range targets {
		g, _ := cfg.GatesFor(t.app, t.env)
		out = append(out, GateScope{App: t.app, Environment: t.env, Names: CheckNames(g)})
	}
	return out
}

// lost ends an evaluation whose last attempt (last) was lost with its
// process (errLostAttempt), evaluating nothing more. When the pull
// request's head has moved on, the runs it showed in progress (and those
// a Re-run was clicked on) are answered as an attempt that finds the head
// moved answers them (oldHead): the commit is no longer the head, which
// is; failing them as not evaluated would send the reviewer to re-run a
// commit ripcord no longer judges. Otherwise, or when that answer cannot
// be written, it gives up, with the gates it knew read again (knewGates).
func (w *evaluateWorker) lost(ctx context.Context, job *river.Job[EvaluateArgs], last int) error {
	a := job.Args
	known, pr, err := w.knewGates(ctx, a)
	if interrupted(w.deps, err) {
		return err
	}
	if err != nil {
		w.deps.Log.Warn("gate evaluation lost at its last attempt: its gates could not be read again, so those it never showed get no run",
			"repository", a.Repository, "pull_request", a.PullRequest, "head_sha", a.HeadSHA, "error", err)
	}
	if pr != nil && pr.GetHead().GetSHA() != a.HeadSHA {
		err := w.answerMoved(ctx, a, pr, job.ID)
		if err == nil || interrupted(w.deps, err) {
			return err
		}
		// As after a last attempt whose answer failed, its runs are
		// completed by the give-up, which retries.
		w.deps.Log.Warn("gate evaluation lost at its last attempt, of a head the pull request has moved past: its runs could not be answered so, and are given up",
			"repository", a.Repository, "pull_request", a.PullRequest, "head_sha", a.HeadSHA, "error", err)
	}
	w.gaveUp(ctx, job, last, errLostAttempt, known, pr)
	return nil
}

// knewGates learns, for the give-up of an evaluation whose last attempt
// was lost with its process, the gates that attempt was to report: they
// were only in its memory. It reads what the attempt read (judged), as
// each attempt reads it afresh anyway, and returns the pull request read
// (for oldHead's answer, or the give-up's); a pull request whose head
// moved on needs no run on the old commit, and what cannot be read leaves
// the gates unknown (the give-up then completes only the runs the
// evaluation showed), unless the server's stop is what cut the reading
// short (the job then runs again: the error).
func (w *evaluateWorker) knewGates(ctx context.Context, a EvaluateArgs) (known []GateScope, pr *github.PullRequest, err error) {
	ctx, stop := context.WithTimeout(ctx, giveUpTimeout)
	defer stop()
	gh, err := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	var cfg *repoconfig.Config
	var targets []target
	if err == nil {
		pr, cfg, targets, err = w.judged(ctx, gh, a)
	}
	if err != nil {
		return nil, nil, err
	}
	if pr.GetHead().GetSHA() != a.HeadSHA {
		return nil, pr, nil
	}
	return gateScopes(cfg, targets), pr, nil
}

// answerMoved answers, as oldHead, the runs of the evaluation of a (of
// sequence seq) whose head pr has moved past, in the time a give-up gets.
func (w *evaluateWorker) answerMoved(ctx context.Context, a EvaluateArgs, pr *github.PullRequest, seq int64) error {
	ctx, stop := context.WithTimeout(ctx, giveUpTimeout)
	defer stop()
	gh, err := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	return w.oldHead(ctx, gh, a, pr, seq)
}

// target is one environment whose release the PR promotes.
type target struct {
	app, env string
	e        *repoconfig.Environment
	head     []byte
}

// releases finds the environments the PR is a release of: their release
// file lives in this repository, exists at the head, and either changed
// what it pins or the head branch matches gates.branches.
func (w *evaluateWorker) releases(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, pr *github.PullRequest, a EvaluateArgs) ([]target, error) {
	var out []target
	for _, app := range cfg.AppNames() {
		for _, env := range cfg.Apps[app].EnvironmentNames() {
			e := cfg.Apps[app].Environments[env]
			rb := e.Rollback
			if rb.File == "" || (rb.Repository != "" && rb.Repository != a.Repository) {
				continue
			}
			head, err := ghclient.FileAt(ctx, gh, a.Repository, rb.File, a.HeadSHA)
			if err != nil {
				return nil, err
			}
			if head == nil {
				continue
			}
			g, _ := cfg.GatesFor(app, env)
			if !onReleaseBranch(g.Branches, pr.GetHead().GetRef()) {
				base, err := ghclient.FileAt(ctx, gh, a.Repository, rb.File, pr.GetBase().GetSHA())
				if err != nil {
					return nil, err
				}
				if !gates.ChangesRelease(base, head, rb.Fields) {
					continue
				}
			}
			out = append(out, target{app: app, env: env, e: e, head: head})
		}
	}
	return out, nil
}

// concerns reports whether the change that triggered a is one t's gates
// read: a label that qa names, or any label when policy-validation is on
// (the policy service is sent the labels); the body when itsm is on. A
// push, a re-run or a new base concerns every gate.
func concerns(cfg *repoconfig.Config, t target, a EvaluateArgs) bool {
	g, _ := cfg.GatesFor(t.app, t.env)
	switch {
	case a.Label != "":
		return g.Process.PolicyValidation != nil || (g.Process.QA != nil && gates.QA{Labels: g.Process.QA.Labels}.Names(a.Label))
	case a.Edited == editedBody:
		return g.Process.ITSM != nil
	}
	return true
}

func onReleaseBranch(globs []string, branch string) bool {
	if globs == nil {
		globs = DefaultBranches
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, branch); ok {
			return true
		}
	}
	return false
}

func splitRepo(full string) (string, string) {
	for i := 0; i < len(full); i++ {
		if full[i] == '/' {
			return full[:i], full[i+1:]
		}
	}
	return full, ""
}
