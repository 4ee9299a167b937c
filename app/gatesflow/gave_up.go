package gatesflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
)

// GaveUpTitle is the title of a gate run whose evaluation's job failed for
// good: the gate was not evaluated, so it does not pass.
const GaveUpTitle = "ripcord could not evaluate this gate"

// giveUpTimeout bounds the queueing of a give-up, which runs after the
// evaluation's own context may have ended (its timeout).
const giveUpTimeout = 30 * time.Second

// GaveUpArgs completes the runs an evaluation showed in progress when its
// job fails for good (its last attempt, or a cancel): nothing else would
// ever complete them, and a required gate would block the merge with a
// spinner that says nothing; and it makes the runs, failed alike, of the
// gates the evaluation knew (Gates) and never showed. Seq is the
// evaluation's job id (externalID), Attempts how many it made, Error its
// last error in plain words.
type GaveUpArgs struct {
	Repository     string `json:"repository"`
	PullRequest    int    `json:"pull_request"`
	HeadSHA        string `json:"head_sha"`
	Trigger        string `json:"trigger"`
	InstallationID int64  `json:"installation_id"`
	Seq            int64  `json:"seq"`
	Attempts       int    `json:"attempts"`
	Error          string `json:"error"`
	// Gates are the gates the evaluation was to report, when its last
	// attempt knew them (or, that attempt lost with its process, when they
	// could be read again: knewGates): those it never showed in progress
	// get a run too.
	Gates []GateScope `json:"gates,omitempty"`
	// Head is the pull request's head as the evaluation's last attempt
	// read it (PullRequestURL its page), empty when that attempt failed
	// before reading it: the give-up then reads it. When the head has
	// moved past HeadSHA, the runs are answered as an attempt that finds
	// it moved answers them (oldHead), unless that attempt's answer is
	// what failed (AnswerFailed): they are then failed as not evaluated.
	Head           string `json:"head,omitempty"`
	PullRequestURL string `json:"pull_request_url,omitempty"`
	AnswerFailed   bool   `json:"answer_failed,omitempty"`
}

// GateScope names the gates (their check runs' names) an evaluation was
// to report for one app's environment.
type GateScope struct {
	App         string   `json:"app"`
	Environment string   `json:"environment"`
	Names       []string `json:"names"`
}

// Kind names the job in the queue.
func (GaveUpArgs) Kind() string { return "gates_gave_up" }

// gaveUp queues the give-up of the evaluation job that failed for good
// with err after attempts, whose last attempt read pr (nil: it did not).
// Its own context, as the job's may be what ran out.
func (w *evaluateWorker) gaveUp(ctx context.Context, job *river.Job[EvaluateArgs], attempts int, err error, known []GateScope, pr *github.PullRequest) {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), giveUpTimeout)
	defer stop()
	a := job.Args
	g := GaveUpArgs{Repository: a.Repository, PullRequest: a.PullRequest, HeadSHA: a.HeadSHA, Trigger: a.Trigger,
		InstallationID: a.InstallationID, Seq: job.ID, Attempts: attempts, Error: plainError(err, "evaluation", w.timeout), Gates: known}
	if pr != nil {
		g.Head, g.PullRequestURL = pr.GetHead().GetSHA(), pr.GetHTMLURL()
		// An attempt that found the head moved tried to answer its runs so
		// (oldHead), and that answer is what failed.
		g.AnswerFailed = g.Head != a.HeadSHA
	}
	// One attempt more than the completion uses, for a lost last one
	// (gaveUpWorker.Work).
	if _, ierr := w.deps.River().Insert(ctx, g, &river.InsertOpts{MaxAttempts: reportAttempts + 1, UniqueOpts: river.UniqueOpts{ByArgs: true}}); ierr != nil {
		// The database is down too: the runs stay in progress until a
		// newer evaluation of the commit (a push, a re-run) ends them.
		w.deps.Log.Error("gate evaluation gave up, and its runs in progress could not be queued for completion",
			"repository", a.Repository, "pull_request", a.PullRequest, "head_sha", a.HeadSHA, "error", err, "queue_error", ierr)
		return
	}
	w.deps.Log.Warn("gate evaluation gave up: its runs in progress are completed as failures", "repository", a.Repository,
		"pull_request", a.PullRequest, "head_sha", a.HeadSHA, "attempts", attempts, "error", err)
}

// plainError says err, the last error of a job (job names it: "evaluation",
// "write") that had timeout, in words a reviewer reads on a check run:
// GitHub's answer as its status and message, not go-github's request dump.
func plainError(err error, job string, timeout time.Duration) string {
	s := err.Error()
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		said := fmt.Sprintf("GitHub answered %d %s", er.Response.StatusCode, strings.TrimSpace(er.Message))
		s = strings.Replace(s, er.Error(), strings.TrimSpace(said), 1)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		s += fmt.Sprintf(" (the %s ran out of its %s)", job, timeout)
	}
	return s
}

type gaveUpWorker struct {
	river.WorkerDefaults[GaveUpArgs]
	deps pipeline.Deps
}

func (w *gaveUpWorker) Timeout(*river.Job[GaveUpArgs]) time.Duration { return time.Minute }

// Work completes the evaluation's runs (work) in reportAttempts attempts.
// Nothing completes them if the give-up does not, so unlike an evaluation's
// or a verdict's, the give-up's attempt kept beyond its budget (run only
// when the last attempt of the budget was lost with its process, as River's
// rescuer discards a job lost at its MaxAttempts: errLostAttempt) does the
// lost attempt's work again rather than give up. A last attempt of the
// budget that fails ends the job (cancelled), so the kept attempt is not a
// ninth try at what GitHub refused eight times.
func (w *gaveUpWorker) Work(ctx context.Context, job *river.Job[GaveUpArgs]) error {
	last := budget(reportAttempts, job.MaxAttempts)
	if job.Attempt > last {
		w.deps.Log.Warn("gate give-up's last attempt was lost with its process: its work runs again",
			"repository", job.Args.Repository, "pull_request", job.Args.PullRequest, "head_sha", job.Args.HeadSHA)
	}
	err := w.work(ctx, job)
	if snooze := pipeline.LimitSnooze(ctx, w.deps, job.Kind, err); snooze != nil {
		return snooze // GitHub said "later", not "no": not a try that failed
	}
	var cancelled *river.JobCancelError
	if err == nil || job.Attempt != last || errors.As(err, &cancelled) || interrupted(w.deps, err) {
		return err
	}
	w.deps.Log.Error("gate give-up failed for good: the evaluation's runs stay in progress until a newer evaluation ends them",
		"repository", job.Args.Repository, "pull_request", job.Args.PullRequest, "head_sha", job.Args.HeadSHA,
		"attempts", job.Attempt, "error", err)
	return river.JobCancel(err)
}

// work queues a failure report for each run of the evaluation still in
// progress: the report job completes it (or, if a newer evaluation has
// reported the gate, completes it superseded), with the retries of any
// gate report. Each gate the evaluation knew (a.Gates) and has no run of
// gets one: a required check of it would otherwise wait for ever. When
// the pull request's head has moved past the evaluation's commit (see
// movedHead), the failure says so, as oldHead's answer does, and no run
// is made on the old commit.
func (w *gaveUpWorker) work(ctx context.Context, job *river.Job[GaveUpArgs]) error {
	a := job.Args
	gh, err := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	moved, err := w.movedHead(ctx, gh, a)
	if err != nil {
		return err
	}
	title, summary, gates := GaveUpTitle, gaveUpSummary(a), a.Gates
	if moved != nil {
		title, gates = OldHeadTitle, nil
		summary = oldHeadAnswer(EvaluateArgs{Repository: a.Repository, PullRequest: a.PullRequest, HeadSHA: a.HeadSHA}, moved,
			"This gate was being evaluated on commit", "its evaluation was not finished")
	}
	all, err := evaluationRuns(ctx, gh, w.deps.App().ID, a.Repository, a.PullRequest, a.HeadSHA, a.Trigger, a.Seq)
	if err != nil {
		return err
	}
	var runs []evaluationRun
	made := map[evaluationRun]bool{}
	for _, r := range all {
		made[evaluationRun{externalID: r.externalID, name: r.name}] = true
		if r.run.GetStatus() != "completed" {
			runs = append(runs, r)
		}
	}
	for _, s := range gates {
		key := evaluationKey(a.Repository, a.PullRequest, a.HeadSHA, s.App, s.Environment, a.Trigger, a.Seq)
		for _, name := range s.Names {
			if r := (evaluationRun{externalID: key, name: name}); !made[r] {
				made[r] = true
				runs = append(runs, evaluationRun{externalID: key, name: name, app: s.App, env: s.Environment})
			}
		}
	}
	reports := make([]ReportArgs, 0, len(runs))
	for _, r := range runs {
		// A verdict of the evaluation queued by an attempt before the one
		// that failed (of another environment, say), still being written
		// (GitHub was down too), completes the run: a failure written
		// beside it could land last. No verdict of the evaluation is
		// queued after it gave up.
		pending, err := verdictPending(ctx, w.deps, r)
		if err != nil {
			return err
		}
		if pending {
			continue
		}
		reports = append(reports, ReportArgs{Repository: a.Repository, HeadSHA: a.HeadSHA, InstallationID: a.InstallationID,
			ExternalID: r.externalID, App: r.app, Environment: r.env, Seq: a.Seq, Name: r.name, GaveUp: true, Create: r.run == nil,
			Status: "completed", Conclusion: "failure", Title: title, Summary: summary})
	}
	return queueReports(ctx, w.deps, reports)
}

// movedHead returns the pull request (its head and page, all oldHeadAnswer
// reads) when its head has moved past a's commit, nil when it has not. The
// head the evaluation's last attempt read (a.Head) is taken as it is; only
// when that attempt failed before reading it is the pull request read, as
// the give-up of a lost attempt reads it (knewGates). A read that fails
// leaves the head unknown, and the runs are failed as not evaluated: the
// give-up must complete them whatever GitHub says of the pull request.
// A head whose old-head answer already failed (a.AnswerFailed) is not
// answered so again.
func (w *gaveUpWorker) movedHead(ctx context.Context, gh *github.Client, a GaveUpArgs) (*github.PullRequest, error) {
	head, url := a.Head, a.PullRequestURL
	if head == "" {
		rctx, stop := context.WithTimeout(ctx, giveUpTimeout/2)
		defer stop()
		owner, name := splitRepo(a.Repository)
		pr, _, err := gh.PullRequests.Get(rctx, owner, name, a.PullRequest)
		if interrupted(w.deps, err) {
			return nil, err
		}
		if err != nil {
			w.deps.Log.Warn("gate give-up could not read the pull request: its runs are failed as not evaluated, whether or not its head moved on",
				"repository", a.Repository, "pull_request", a.PullRequest, "head_sha", a.HeadSHA, "error", err)
			return nil, nil
		}
		head, url = pr.GetHead().GetSHA(), pr.GetHTMLURL()
	}
	if head == a.HeadSHA || a.AnswerFailed {
		return nil, nil
	}
	return &github.PullRequest{Head: &github.PullRequestBranch{SHA: &head}, HTMLURL: &url}, nil
}

// verdictPending reports whether a verdict of run's gate and evaluation
// waits in the queue or is being written.
func verdictPending(ctx context.Context, d pipeline.Deps, run evaluationRun) (bool, error) {
	arg := func(name string) string { return store.RiverJobArg(d.DB.Dialect, name) }
	var n int
	err := d.DB.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = $1
		AND state IN (`+store.RiverLiveStates+`)
		AND `+arg("external_id")+` = $2 AND `+arg("name")+` = $3 AND `+arg("status")+` = 'completed' AND `+arg("gave_up")+` IS NULL`,
		ReportArgs{}.Kind(), run.externalID, run.name).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("verdicts of %s being written: %w", run.externalID, err)
	}
	return n > 0, nil
}

func gaveUpSummary(a GaveUpArgs) string {
	return fmt.Sprintf("ripcord stopped evaluating the gates of this commit after %d attempts. The last one failed: %s.\n\n"+
		"A gate that was not evaluated does not pass. %s", a.Attempts, a.Error, howToEvaluateAgain)
}

// howToEvaluateAgain ends the summary of a gate run ripcord failed because
// it could not evaluate the gate or write its verdict.
const howToEvaluateAgain = "To evaluate it again, choose **Re-run** on this check run " +
	"(or **Re-run all checks**); a push to the pull request evaluates its gates again too."

// evaluationRun is a gate run of one evaluation (run nil: one to make).
type evaluationRun struct {
	run                        *github.CheckRun
	externalID, name, app, env string
}

// evaluationRuns lists the gate runs of one evaluation (of pull request
// number, on head, with trigger and sequence seq; every app and
// environment) that this App made.
func evaluationRuns(ctx context.Context, gh *github.Client, appID int64, repository string, number int, head, trigger string, seq int64) ([]evaluationRun, error) {
	runs, err := gateRuns(ctx, gh, appID, repository, head)
	if err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("%s#%d@%s ", repository, number, head)
	suffix := fmt.Sprintf(" %s%s%d", trigger, seqMark, seq)
	var out []evaluationRun
	for _, cr := range runs {
		id := cr.GetExternalID()
		scope, ours := strings.CutPrefix(id, prefix)
		scope, this := strings.CutSuffix(scope, suffix)
		if !ours || !this {
			continue
		}
		if app, env, ok := strings.Cut(scope, "/"); ok {
			out = append(out, evaluationRun{run: cr, externalID: id, name: cr.GetName(), app: app, env: env})
		}
	}
	return out, nil
}
