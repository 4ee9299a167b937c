package gatesflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/gates"
)

const reportAttempts = 8

// ReportArgs writes one gate's check run. Unique by args: the same verdict
// of the same evaluation is written once.
type ReportArgs struct {
	Repository     string `json:"repository"`
	HeadSHA        string `json:"head_sha"`
	InstallationID int64  `json:"installation_id"`
	ExternalID     string `json:"external_id"`
	// App and Environment name the evaluation's scope, Seq its place
	// among the scope's evaluations of the commit (EvaluationSeq): once a
	// newer one has a run of the gate, this one's verdict is stale. Empty
	// in jobs queued before they existed.
	App         string             `json:"app,omitempty"`
	Environment string             `json:"environment,omitempty"`
	Seq         int64              `json:"seq,omitempty"`
	Name        string             `json:"name"`
	Status      string             `json:"status"` // in_progress or completed
	Conclusion  string             `json:"conclusion,omitempty"`
	Title       string             `json:"title"`
	Summary     string             `json:"summary,omitempty"`
	Annotations []gates.Annotation `json:"annotations,omitempty"`
	// GaveUp marks the failure of an evaluation whose job failed for good
	// (GaveUpArgs): it completes the evaluation's run in progress, and a
	// verdict of the same evaluation replaces it. It creates a run only
	// with Create (a gate the evaluation knew and never showed), when the
	// gate has none of the evaluation or of a newer one.
	GaveUp bool `json:"gave_up,omitempty"`
	Create bool `json:"create,omitempty"`
}

// Kind names the job in the queue.
func (ReportArgs) Kind() string { return "gates_report" }

func completed(a EvaluateArgs, t target, seq int64, key string, o gates.Output) ReportArgs {
	return ReportArgs{Repository: a.Repository, HeadSHA: a.HeadSHA, InstallationID: a.InstallationID, ExternalID: key,
		App: t.app, Environment: t.env, Seq: seq, Name: o.Name, Status: "completed", Conclusion: string(o.Conclusion), Title: o.Title, Summary: o.Summary, Annotations: o.Annotations}
}

func queueReport(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], r ReportArgs) error {
	// One attempt more than a verdict uses, for a lost last one (errLostAttempt).
	_, err := rc.InsertTx(ctx, tx, r, &river.InsertOpts{MaxAttempts: reportAttempts + 1, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return fmt.Errorf("queue %s on %s@%s: %w", r.Name, r.Repository, r.HeadSHA, err)
	}
	return nil
}

type reportWorker struct {
	river.WorkerDefaults[ReportArgs]
	deps pipeline.Deps
}

// reportTimeout bounds a check-run write job.
const reportTimeout = time.Minute

func (w *reportWorker) Timeout(*river.Job[ReportArgs]) time.Duration { return reportTimeout }

func (w *reportWorker) Work(ctx context.Context, job *river.Job[ReportArgs]) error {
	last := budget(reportAttempts, job.MaxAttempts)
	if job.Attempt > last {
		// The last attempt was lost with its process (errLostAttempt): the
		// verdict is not written, and its run is ended as for a refusal.
		w.notWritten(ctx, job, last, errLostAttempt)
		return nil
	}
	err := w.work(ctx, job)
	if snooze := pipeline.LimitSnooze(ctx, w.deps, job.Kind, err); snooze != nil {
		return snooze // GitHub said "later", not "no": not a try that failed
	}
	var waits *river.JobSnoozeError
	if errors.As(err, &waits) {
		return err // another job creates a run of the gate (claimCreation)
	}
	var cancelled *river.JobCancelError
	if err == nil || (job.Attempt < last && !errors.As(err, &cancelled)) || interrupted(w.deps, err) {
		return err
	}
	// The last try failed (or the job was cancelled): nothing will write
	// the verdict again, and the run it was to complete would spin for
	// ever (notWritten). The attempt kept for a lost one is not run.
	w.notWritten(ctx, job, job.Attempt, err)
	if errors.As(err, &cancelled) {
		return err
	}
	return river.JobCancel(err)
}

func (w *reportWorker) work(ctx context.Context, job *river.Job[ReportArgs]) error {
	a := job.Args
	gh, err := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	owner, repo := splitRepo(a.Repository)
	existing, newer, stale, err := findRun(ctx, gh, w.deps.App().ID, owner, repo, a)
	if err != nil {
		return err
	}
	if mayCreate(a, existing, newer) {
		// Created in the order of the evaluations (claimCreation): what
		// is found while the claim is held decides.
		release, held, err := claimCreation(ctx, w.deps, a, job.ID)
		if err != nil {
			return err
		}
		if !held {
			return river.JobSnooze(claimWait)
		}
		defer release()
		if existing, newer, stale, err = findRun(ctx, gh, w.deps.App().ID, owner, repo, a); err != nil {
			return err
		}
	}
	if newer != nil {
		w.deps.Log.Info("gate verdict superseded by a newer evaluation", "repository", a.Repository, "head_sha", a.HeadSHA,
			"gate", a.Name, "evaluation", a.ExternalID, "newer", newer.GetExternalID())
		return w.supersede(ctx, gh, a, existing, newer)
	}
	if a.GaveUp && (existing == nil && !a.Create || existing != nil && existing.GetStatus() == "completed") {
		return nil // a verdict got there: it is the gate's result
	}
	if a.Status == "in_progress" {
		if existing != nil {
			return nil // the verdict (or an earlier attempt) got there first
		}
		return createInProgress(ctx, gh, a)
	}
	if existing, err = w.complete(ctx, gh, a, existing); err != nil {
		return err
	}
	for _, cr := range stale {
		if err := w.supersede(ctx, gh, a, cr, existing); err != nil {
			return err
		}
	}
	return nil
}

// complete writes the verdict: the run (created, or this evaluation's in
// progress run updated) with its conclusion and the first annotations, then
// the others, 50 a request (GitHub's limit), by updates, whose annotations
// GitHub adds to the run's. A retried job resumes after the annotations the
// run already holds (its output.annotations_count): one that failed after
// some requests, or whose request GitHub applied but whose answer was lost,
// would otherwise add every annotation again. GitHub's count, not a note of
// the job's, is what the run holds whatever the job saw.
func (w *reportWorker) complete(ctx context.Context, gh *github.Client, a ReportArgs, existing *github.CheckRun) (*github.CheckRun, error) {
	owner, repo := splitRepo(a.Repository)
	rest := a.Annotations
	if existing != nil {
		rest = rest[min(existing.GetOutput().GetAnnotationsCount(), len(rest)):]
	}
	// A failure ripcord wrote in this evaluation's run in place of a
	// verdict may have completed it first: a give-up's (the verdict was
	// queued by an attempt before the one that failed for good), or an
	// old-head answer's (a Re-run, or a Re-run of the suite, clicked after
	// the head moved while this evaluation, which judged the commit while
	// it was the head, was still running). The verdict is what the gate
	// says, so it replaces the failure wholly: conclusion, title, summary
	// and annotations. Only completing the run would leave the failure's
	// conclusion under the verdict's text.
	replaced := existing != nil && !a.GaveUp && existing.GetConclusion() == "failure" &&
		(existing.GetOutput().GetTitle() == GaveUpTitle || existing.GetOutput().GetTitle() == OldHeadTitle)
	if existing == nil || existing.GetStatus() != "completed" || replaced {
		first := rest[:min(gates.MaxAnnotationsPerCall, len(rest))]
		rest = rest[len(first):]
		now := github.Timestamp{Time: w.deps.Now()}
		out := &github.CheckRunOutput{Title: &a.Title, Summary: &a.Summary, Annotations: toGitHub(first)}
		var err error
		if existing != nil {
			_, _, err = gh.Checks.UpdateCheckRun(ghclient.Idempotent(ctx), owner, repo, existing.GetID(), github.UpdateCheckRunOptions{
				Name: a.Name, Status: github.String("completed"), Conclusion: &a.Conclusion, CompletedAt: &now, Output: out,
			})
		} else {
			existing, _, err = gh.Checks.CreateCheckRun(ctx, owner, repo, github.CreateCheckRunOptions{
				Name: a.Name, HeadSHA: a.HeadSHA, ExternalID: &a.ExternalID, Status: github.String("completed"),
				Conclusion: &a.Conclusion, CompletedAt: &now, Output: out,
			})
		}
		if err != nil {
			return nil, wrap(a, err)
		}
	}
	if len(rest) == 0 {
		return existing, nil
	}
	for _, b := range gates.Batches(rest) {
		_, _, err := gh.Checks.UpdateCheckRun(ctx, owner, repo, existing.GetID(), github.UpdateCheckRunOptions{
			Name: a.Name, Output: &github.CheckRunOutput{Title: &a.Title, Summary: &a.Summary, Annotations: toGitHub(b)},
		})
		if err != nil {
			return nil, wrap(a, err)
		}
	}
	return existing, nil
}

// supersede completes existing, a run of the gate an older evaluation
// shows in progress, neutral, pointing at newer, the run of a newer
// evaluation of the commit: a reviewer must not see the gate spinning
// beside its newer verdict. It is how the report of an evaluation a newer
// one overtook ends (existing is then its own run, if it showed one, and it
// writes no verdict: a run made now would be the gate's newest on the
// commit, shown as its result, with a stale verdict), and how a verdict
// ends the runs older evaluations left in progress (findRun's stale): one
// from before external ids carried a sequence, or one whose job was lost,
// which nothing else would ever complete. The deployment protection rule
// reads the newest evaluation (EvaluationSeq), whose run exists.
func (w *reportWorker) supersede(ctx context.Context, gh *github.Client, a ReportArgs, existing, newer *github.CheckRun) error {
	if existing == nil || existing.GetStatus() == "completed" {
		return nil
	}
	w.deps.Log.Info("gate run in progress completed as superseded", "repository", a.Repository, "head_sha", a.HeadSHA,
		"gate", a.Name, "evaluation", existing.GetExternalID(), "newer", newer.GetExternalID())
	owner, repo := splitRepo(a.Repository)
	now := github.Timestamp{Time: w.deps.Now()}
	summary := fmt.Sprintf("A newer evaluation of this commit reports %s: %s", a.Name, newer.GetHTMLURL())
	_, _, err := gh.Checks.UpdateCheckRun(ghclient.Idempotent(ctx), owner, repo, existing.GetID(), github.UpdateCheckRunOptions{
		Name: a.Name, Status: github.String("completed"), Conclusion: github.String("neutral"), CompletedAt: &now,
		Output: &github.CheckRunOutput{Title: github.String("Superseded by a newer evaluation"), Summary: &summary},
	})
	return wrap(a, err)
}

// showInProgress creates the run of a gate still being evaluated, unless
// this evaluation already has one (a retried job) or a newer evaluation
// has reported the gate, or another job is creating a run of the gate
// (claimCreation; job is the evaluation's): its verdict creates the run
// then.
func showInProgress(ctx context.Context, gh *github.Client, d pipeline.Deps, a ReportArgs, job int64) error {
	owner, repo := splitRepo(a.Repository)
	appID := d.App().ID
	if existing, newer, _, err := findRun(ctx, gh, appID, owner, repo, a); err != nil || existing != nil || newer != nil {
		return err
	}
	release, held, err := claimCreation(ctx, d, a, job)
	if err != nil || !held {
		return err
	}
	defer release()
	if existing, newer, _, err := findRun(ctx, gh, appID, owner, repo, a); err != nil || existing != nil || newer != nil {
		return err
	}
	return createInProgress(ctx, gh, a)
}

// createInProgress creates the run of a gate still being evaluated.
func createInProgress(ctx context.Context, gh *github.Client, a ReportArgs) error {
	owner, repo := splitRepo(a.Repository)
	_, _, err := gh.Checks.CreateCheckRun(ctx, owner, repo, github.CreateCheckRunOptions{
		Name: a.Name, HeadSHA: a.HeadSHA, ExternalID: &a.ExternalID, Status: github.String("in_progress"),
		Output: &github.CheckRunOutput{Title: &a.Title, Summary: github.String("The gate is being evaluated.")},
	})
	return wrap(a, err)
}

func wrap(a ReportArgs, err error) error {
	if err != nil {
		return fmt.Errorf("report %s on %s@%s: %w", a.Name, a.Repository, a.HeadSHA, err)
	}
	return nil
}

// findRun returns this evaluation's run of the gate, if this App (appID)
// created one. A workflow's token or another App can make a run of the
// gate's name and copy the external id from ours: taken for ours, it would
// keep ripcord from showing the gate in progress, and its verdict's update
// would be refused by GitHub on every attempt, so the gate would never
// report; app_id leaves such runs out.
//
// The list asks for filter=all: GitHub's default (latest) keeps only the
// newest run of the name, so another evaluation of the gate on the same
// commit (a re-run, a second release of the commit) would hide this one's
// run, and its verdict would make a second run and leave the first in
// progress. The external id, unique to an evaluation, picks ours among
// them, on whatever page it is.
//
// newer is the run of the gate of the newest evaluation of the same app
// and environment on the commit that is newer than this one (by
// EvaluationSeq), if one has reported it; stale are the runs of the gate
// that older evaluations of them show in progress (those from before
// external ids carried a sequence count as older).
func findRun(ctx context.Context, gh *github.Client, appID int64, owner, repo string, a ReportArgs) (ours, newer *github.CheckRun, stale []*github.CheckRun, err error) {
	opts := &github.ListCheckRunsOptions{CheckName: &a.Name, AppID: &appID, Filter: github.String("all"),
		ListOptions: github.ListOptions{PerPage: 100}}
	for {
		list, resp, err := gh.Checks.ListCheckRunsForRef(ctx, owner, repo, a.HeadSHA, opts)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("look for %s on %s/%s@%s: %w", a.Name, owner, repo, a.HeadSHA, err)
		}
		for _, cr := range list.CheckRuns {
			if cr.GetApp().GetID() != appID {
				continue
			}
			id := cr.GetExternalID()
			switch {
			case id == a.ExternalID:
				if ours == nil {
					ours = cr
				}
			case a.App == "" || !EvaluationOf(id, a.Repository, a.HeadSHA, a.App, a.Environment):
			case EvaluationSeq(id) > a.Seq:
				if newer == nil || EvaluationSeq(id) > EvaluationSeq(newer.GetExternalID()) {
					newer = cr
				}
			case EvaluationSeq(id) < a.Seq && cr.GetStatus() != "completed":
				stale = append(stale, cr)
			}
		}
		if resp.NextPage == 0 {
			return ours, newer, stale, nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}

func toGitHub(as []gates.Annotation) []*github.CheckRunAnnotation {
	out := make([]*github.CheckRunAnnotation, 0, len(as))
	for _, x := range as {
		out = append(out, &github.CheckRunAnnotation{
			Path: github.String(x.Path), StartLine: github.Int(x.Line), EndLine: github.Int(x.Line),
			AnnotationLevel: github.String(x.Level), Title: github.String(x.Title), Message: github.String(x.Message),
		})
	}
	return out
}
