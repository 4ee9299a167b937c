package gatesflow

import (
	"context"
	"fmt"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/ghclient"
)

// OldHeadTitle is the title of a gate run of a head the pull request has
// moved past, in progress when a Re-run was clicked on it: it was not
// evaluated, so it does not pass.
const OldHeadTitle = "Not evaluated: this commit is no longer the pull request's head"

// oldHead answers a Re-run clicked on a gate run (a.CheckRunID) of a head
// pr has moved past. The gates judge a pull request's head, and a run
// made now on the old commit would be that commit's newest verdict of the
// gate, judged with the pull request as it is today; so nothing is
// evaluated, and the reviewer, who would otherwise see the click change
// nothing, is told in the run why and where the current head's gates are.
// A run still in progress (its evaluation lost) is completed failure: a
// gate that was not evaluated does not pass (neutral would pass the
// deployment protection rule). A completed run keeps its verdict, which
// is still what the gate said of that commit, and gets the answer as its
// output's text.
func (w *evaluateWorker) oldHead(ctx context.Context, gh *github.Client, a EvaluateArgs, pr *github.PullRequest) error {
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
	answer := oldHeadAnswer(a, pr)
	w.deps.Log.Info("gate re-run on a head the pull request has moved past: answered in its run", "repository", a.Repository,
		"pull_request", a.PullRequest, "head_sha", a.HeadSHA, "current_head", pr.GetHead().GetSHA(), "check_run", cr.GetID())
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
		return fmt.Errorf("answer the re-run of gate run %d of %s: %w", cr.GetID(), a.Repository, err)
	}
	return nil
}

func oldHeadAnswer(a EvaluateArgs, pr *github.PullRequest) string {
	where := fmt.Sprintf("pull request #%d", a.PullRequest)
	if u := pr.GetHTMLURL(); u != "" {
		where = fmt.Sprintf("[pull request #%d](%s/checks)", a.PullRequest, u)
	}
	return fmt.Sprintf("**Re-run** was asked on this run, of commit %s, which is no longer the head of pull request #%d: "+
		"its head is now %s. ripcord evaluates the gates of a pull request's head only, so this run was not evaluated again. "+
		"The gates of the current head are among its commit's checks, on the Checks tab of %s; choose **Re-run** there.",
		a.HeadSHA, a.PullRequest, pr.GetHead().GetSHA(), where)
}
