package gatesflow

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/ghclient"
)

// NotWrittenTitle is the title of a gate run whose verdict GitHub refused
// on every attempt of its job: the reviewer cannot see the verdict, so the
// gate does not pass.
const NotWrittenTitle = "ripcord could not write this gate's verdict"

// notWritten ends the verdict job that failed for good with err after
// attempts (its last attempt, or a cancel, or a last attempt lost with its
// process). The run the evaluation showed in
// progress would otherwise spin for ever, and a required gate with it: it
// is completed as a failure that says why and how to evaluate again,
// unless a newer evaluation reports the gate (the run is then completed
// superseded, as the verdict would have), or the run is completed already
// (the verdict was taken, and only later annotations were refused, or a
// give-up's failure stands): those are left as they are. A gate with no
// run of the evaluation (the verdict was to create it, and that is the
// write GitHub refused) gets one, created as that failure: a required
// check of it would otherwise wait "Expected" for ever. Whichever of these
// runs stands for the gate, the runs older evaluations left in progress
// (findRun's stale) are completed superseded, pointing at it, as a verdict
// does: their jobs will never finish them, and nothing else would. What
// cannot be written is logged as an error naming the run.
func (w *reportWorker) notWritten(ctx context.Context, job *river.Job[ReportArgs], attempts int, err error) {
	a := job.Args
	log := w.deps.Log.With("repository", a.Repository, "head_sha", a.HeadSHA, "gate", a.Name, "evaluation", a.ExternalID,
		"attempts", attempts, "error", err)
	if a.Status != "completed" || a.GaveUp {
		// An in-progress report made no run; a give-up's failure is the
		// write that was refused: writing it again would be refused too.
		log.Error("gate check run could not be written: the gate's run, if any, stays as it is until a newer evaluation ends it")
		return
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), giveUpTimeout)
	defer stop()
	gh, gerr := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	if gerr != nil {
		log.Error("gate verdict could not be written, nor its run completed as a failure", "run_error", gerr)
		return
	}
	owner, repo := splitRepo(a.Repository)
	existing, newer, stale, ferr := findRun(ctx, gh, w.deps.App().ID, owner, repo, a)
	switch {
	case ferr != nil:
		log.Error("gate verdict could not be written, nor its run completed as a failure", "run_error", ferr)
		return
	case newer != nil:
		if serr := w.supersede(ctx, gh, a, existing, newer); serr != nil {
			log.Error("gate verdict could not be written, nor its run completed as superseded",
				"check_run", existing.GetID(), "url", existing.GetHTMLURL(), "run_error", serr)
		}
		return
	case existing != nil && existing.GetStatus() == "completed":
		log.Error("gate verdict job failed for good after its run was completed: the run is left as it is",
			"check_run", existing.GetID(), "url", existing.GetHTMLURL(), "conclusion", existing.GetConclusion())
	default:
		if existing = w.failRun(ctx, gh, a, existing, attempts, err, log); existing == nil {
			return
		}
	}
	for _, cr := range stale {
		if serr := w.supersede(ctx, gh, a, cr, existing); serr != nil {
			log.Error("an older evaluation's run of the gate left in progress could not be completed as superseded",
				"check_run", cr.GetID(), "url", cr.GetHTMLURL(), "older_evaluation", cr.GetExternalID(), "run_error", serr)
		}
	}
}

// failRun completes existing, this evaluation's run of the gate in
// progress, as the failure that says the verdict could not be written, or
// creates the run so when there is none. It returns the run, or nil when
// GitHub refused that too (logged).
func (w *reportWorker) failRun(ctx context.Context, gh *github.Client, a ReportArgs, existing *github.CheckRun, attempts int, err error, log *slog.Logger) *github.CheckRun {
	owner, repo := splitRepo(a.Repository)
	now := github.Timestamp{Time: w.deps.Now()}
	summary := notWrittenSummary(a, attempts, plainError(err, "write", reportTimeout))
	failure := &github.CheckRunOutput{Title: github.String(NotWrittenTitle), Summary: &summary}
	if existing == nil {
		cr, _, cerr := gh.Checks.CreateCheckRun(ctx, owner, repo, github.CreateCheckRunOptions{
			Name: a.Name, HeadSHA: a.HeadSHA, ExternalID: &a.ExternalID, Status: github.String("completed"),
			Conclusion: github.String("failure"), CompletedAt: &now, Output: failure,
		})
		if cerr != nil {
			log.Error("gate verdict could not be written, nor a run of the gate created as a failure: the gate has no run of this evaluation",
				"run_error", cerr)
			return nil
		}
		log.Warn("gate verdict could not be written: a run of the gate is created as a failure", "check_run", cr.GetID(), "url", cr.GetHTMLURL())
		return cr
	}
	_, _, uerr := gh.Checks.UpdateCheckRun(ghclient.Idempotent(ctx), owner, repo, existing.GetID(), github.UpdateCheckRunOptions{
		Name: a.Name, Status: github.String("completed"), Conclusion: github.String("failure"), CompletedAt: &now, Output: failure,
	})
	if uerr != nil {
		log.Error("gate verdict could not be written, nor its run completed as a failure: the run stays in progress until a newer evaluation ends it",
			"check_run", existing.GetID(), "url", existing.GetHTMLURL(), "run_error", uerr)
		return nil
	}
	log.Warn("gate verdict could not be written: its run is completed as a failure", "check_run", existing.GetID(), "url", existing.GetHTMLURL())
	return existing
}

func notWrittenSummary(a ReportArgs, attempts int, why string) string {
	return fmt.Sprintf("ripcord evaluated this gate (%s: %s) but could not write its verdict here after %d attempts. "+
		"The last one failed: %s.\n\nA gate whose verdict is not shown does not pass. %s", a.Conclusion, a.Title, attempts, why, howToEvaluateAgain)
}
