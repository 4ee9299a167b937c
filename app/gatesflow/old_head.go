package gatesflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/ghclient"
)

// OldHeadTitle is the title of a gate run of a head the pull request has
// moved past that was still in progress when ripcord answered it (a Re-run
// clicked on it or on its suite, or its own evaluation finding the head
// moved): it was not evaluated, so it does not pass. A verdict of the
// run's evaluation that lands later (it judged the commit while it was the
// head) replaces it wholly, as it replaces a give-up's failure.
const OldHeadTitle = "Not evaluated: this commit is no longer the pull request's head"

// oldHead ends an evaluation (of sequence seq) of a head pr has moved past.
// The gates judge a pull request's head, and a run made now on the old
// commit would be that commit's newest verdict of the gate, judged with
// the pull request as it is today; so nothing is evaluated, and the runs
// that would otherwise never change say why and where the current head's
// gates are:
//   - the runs this evaluation showed in progress (an earlier attempt of
//     its job did, then failed), which nothing else would ever complete;
//   - the run a Re-run was clicked on (a.CheckRunID), or, for a Re-run of
//     ripcord's check suite, each gate run of the pull request on the
//     commit: the reviewer would otherwise see the click change nothing.
//
// A run still in progress is completed failure: a gate that was not
// evaluated does not pass (neutral would pass the deployment protection
// rule). A completed run keeps its verdict, which is still what the gate
// said of that commit, and gets the answer as its output's text. A run
// whose verdict is on its way is left to it (see verdictPending).
func (w *evaluateWorker) oldHead(ctx context.Context, gh *github.Client, a EvaluateArgs, pr *github.PullRequest, seq int64) error {
	w.deps.Log.Info("gate evaluation of a head the pull request has moved past: not evaluated", "repository", a.Repository,
		"pull_request", a.PullRequest, "head_sha", a.HeadSHA, "current_head", pr.GetHead().GetSHA(), "trigger", a.Trigger)
	if suiteRerun(a) {
		// Its runs are the pull request's on the commit, this
		// evaluation's among them.
		return w.answerSuite(ctx, gh, a, pr)
	}
	own, err := evaluationRuns(ctx, gh, w.deps.App().ID, a.Repository, a.PullRequest, a.HeadSHA, a.Trigger, seq)
	if err != nil {
		return err
	}
	moved := oldHeadAnswer(a, pr, "This gate was being evaluated on commit", "its evaluation was not finished")
	for _, r := range own {
		if r.run.GetStatus() == "completed" {
			continue
		}
		if err := w.answerUnlessPending(ctx, gh, a, r.run, moved); err != nil {
			return err
		}
	}
	if a.CheckRunID == 0 {
		return nil
	}
	owner, repo := splitRepo(a.Repository)
	cr, _, err := gh.Checks.GetCheckRun(ctx, owner, repo, a.CheckRunID)
	if err != nil {
		return fmt.Errorf("read the re-run gate run %d of %s: %w", a.CheckRunID, a.Repository, err)
	}
	if cr.GetApp().GetID() != w.deps.App().ID || cr.GetHeadSHA() != a.HeadSHA || !isGate(cr.GetName()) {
		return nil
	}
	return w.answerOldHead(ctx, gh, a, cr, oldHeadAnswer(a, pr, "**Re-run** was asked on this run, of commit", "this run was not evaluated again"))
}

// answerSuite answers a Re-run of ripcord's check suite of a head pr has
// moved past in each gate run of the pull request on that commit; another
// pull request's runs there (one with the same head branch and another
// base) are that pull request's evaluation's to answer.
func (w *evaluateWorker) answerSuite(ctx context.Context, gh *github.Client, a EvaluateArgs, pr *github.PullRequest) error {
	runs, err := gateRuns(ctx, gh, w.deps.App().ID, a.Repository, a.HeadSHA)
	if err != nil {
		return err
	}
	answer := oldHeadAnswer(a, pr, "**Re-run all checks** was asked on the checks of commit", "this run was not evaluated again")
	for _, cr := range runs {
		if n, ok := pullRequestOf(cr.GetExternalID(), a.Repository, a.HeadSHA); !ok || n != a.PullRequest {
			continue
		}
		if err := w.answerUnlessPending(ctx, gh, a, cr, answer); err != nil {
			return err
		}
	}
	return nil
}

// answerUnlessPending answers cr unless it is in progress and a verdict
// of its evaluation is on its way (queued by an attempt before the head
// moved): that verdict completes it, and an answer written beside it
// could land last. A verdict written since cr was listed is read afresh
// once none is on its way: the answer then goes beside it, and the
// verdict stands.
func (w *evaluateWorker) answerUnlessPending(ctx context.Context, gh *github.Client, a EvaluateArgs, cr *github.CheckRun, answer string) error {
	if cr.GetStatus() != "completed" {
		pending, err := verdictPending(ctx, w.deps, evaluationRun{externalID: cr.GetExternalID(), name: cr.GetName()})
		if err != nil || pending {
			return err
		}
		owner, repo := splitRepo(a.Repository)
		id := cr.GetID()
		if cr, _, err = gh.Checks.GetCheckRun(ctx, owner, repo, id); err != nil {
			return fmt.Errorf("read gate run %d of %s: %w", id, a.Repository, err)
		}
	}
	return w.answerOldHead(ctx, gh, a, cr, answer)
}

// answerOldHead writes answer in cr, a gate run of a head the pull
// request has moved past: as the failure's summary if it is in progress,
// as its output's text beside its verdict if it is completed.
func (w *evaluateWorker) answerOldHead(ctx context.Context, gh *github.Client, a EvaluateArgs, cr *github.CheckRun, answer string) error {
	owner, repo := splitRepo(a.Repository)
	opts := github.UpdateCheckRunOptions{Name: cr.GetName()}
	if cr.GetStatus() != "completed" {
		now := github.Timestamp{Time: w.deps.Now()}
		opts.Status, opts.Conclusion, opts.CompletedAt = github.String("completed"), github.String("failure"), &now
		opts.Output = &github.CheckRunOutput{Title: github.String(OldHeadTitle), Summary: &answer}
	} else {
		out := cr.GetOutput()
		opts.Output = &github.CheckRunOutput{Title: github.String(out.GetTitle()), Summary: github.String(out.GetSummary()), Text: &answer}
	}
	if _, _, err := gh.Checks.UpdateCheckRun(ghclient.Idempotent(ctx), owner, repo, cr.GetID(), opts); err != nil {
		return fmt.Errorf("answer in gate run %d of %s that its commit is no longer the head: %w", cr.GetID(), a.Repository, err)
	}
	w.deps.Log.Info("gate run of a head the pull request has moved past answered", "repository", a.Repository,
		"pull_request", a.PullRequest, "head_sha", a.HeadSHA, "check_run", cr.GetID(), "was", cr.GetStatus())
	return nil
}

// oldHeadAnswer says, in a gate run of commit a.HeadSHA, that the commit
// is no longer pr's head, which commit is, and where that commit's gates
// are. what tells what happened to the run, up to the commit; undone what
// ripcord did not do for it.
func oldHeadAnswer(a EvaluateArgs, pr *github.PullRequest, what, undone string) string {
	where := fmt.Sprintf("pull request #%d", a.PullRequest)
	if u := pr.GetHTMLURL(); u != "" {
		where = fmt.Sprintf("[pull request #%d](%s/checks)", a.PullRequest, u)
	}
	return fmt.Sprintf("%s %s, which is no longer the head of pull request #%d: its head is now %s. "+
		"ripcord evaluates the gates of a pull request's head only, so %s. "+
		"The gates of the current head are among its commit's checks, on the Checks tab of %s; choose **Re-run** there.",
		what, a.HeadSHA, a.PullRequest, pr.GetHead().GetSHA(), undone, where)
}

// suiteTrigger begins the trigger of an evaluation a Re-run of ripcord's
// check suite asked for.
const suiteTrigger = "check_suite rerequested "

func suiteRerun(a EvaluateArgs) bool { return strings.HasPrefix(a.Trigger, suiteTrigger) }
