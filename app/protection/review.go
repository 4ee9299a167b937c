package protection

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v66/github"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/rollout"
)

const (
	reviewAttempts = 10
	// gateWait is how often a review waiting for running gates looks again,
	// and gateDeadline how long it waits before it rejects.
	gateWait     = time.Minute
	gateDeadline = time.Hour
	// maxComment keeps the review's comment short enough for GitHub.
	maxComment = 1000
)

// ReviewArgs answers one deployment protection rule request. Unique by
// args: a redelivered event answers once. The deployment tells requests of
// one run apart: a re-run keeps the run id but waits on a new deployment,
// and must be answered again.
type ReviewArgs struct {
	Repository     string `json:"repository" river:"unique"`
	Environment    string `json:"environment" river:"unique"`
	RunID          int64  `json:"run_id" river:"unique"`
	DeploymentID   int64  `json:"deployment_id" river:"unique"`
	SHA            string `json:"sha"`
	InstallationID int64  `json:"installation_id"`
	RequestedAt    int64  `json:"requested_at"` // unix seconds, for the gate deadline
}

// Kind names the job in the queue.
func (ReviewArgs) Kind() string { return "protection_review" }

type reviewWorker struct {
	river.WorkerDefaults[ReviewArgs]
	deps    pipeline.Deps
	loader  *configload.Loader
	reviews *prometheus.CounterVec
}

func (w *reviewWorker) Work(ctx context.Context, job *river.Job[ReviewArgs]) error {
	err := w.work(ctx, job)
	if snooze := pipeline.LimitSnooze(ctx, w.deps, job.Kind, err); snooze != nil {
		return snooze
	}
	return err
}

func (w *reviewWorker) work(ctx context.Context, job *river.Job[ReviewArgs]) error {
	a := job.Args
	if newer, err := superseded(ctx, w.deps.DB, job); err != nil || newer {
		if newer {
			w.deps.Log.Info("deployment protection rule request superseded by a newer one of the run: not answered",
				"repository", a.Repository, "environment", a.Environment, "run_id", a.RunID, "deployment_id", a.DeploymentID)
		}
		return err
	}
	gh, err := w.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	if dec, ok := postedBefore(job); ok {
		// An earlier attempt posted this answer and failed: GitHub may have
		// taken it all the same, so it is the answer, whatever a decision
		// now (a freeze that began since) would say. (One GitHub refused
		// for its rate limit was not kept: answer.)
		return w.post(ctx, gh, a, dec)
	}
	rules, broken, err := w.rules(ctx, gh, a)
	if err != nil {
		return err
	}
	if broken != "" {
		// A config that does not load protects nothing: fail closed, saying so.
		return w.answer(ctx, gh, a, Decision{State: Rejected, Comment: "ripcord: " + broken})
	}
	var runs []CheckRun
	if needsGates(rules) {
		if runs, err = gateRuns(ctx, gh, w.deps.App().ID, a.Repository, a.SHA, rules); err != nil {
			return err
		}
	}
	now := w.deps.Now()
	dec := Decide(rules, runs, a.SHA, now)
	if dec.State == "" {
		if now.Before(time.Unix(a.RequestedAt, 0).Add(gateDeadline)) {
			return river.JobSnooze(gateWait)
		}
		dec = Decision{State: Rejected, Comment: dec.Comment + fmt.Sprintf(" — still running after %s; rejected", gateDeadline)}
	}
	return w.answer(ctx, gh, a, dec)
}

// superseded reports whether a newer request of job's run and environment
// (a re-run, waiting on a new deployment) has a review job of its own.
// GitHub takes a review by run and environment, not by deployment, so this
// job's answer would answer that request with a decision made for this
// one: its gates' deadline, or an answer kept from before a freeze began.
func superseded(ctx context.Context, db *store.DB, job *river.Job[ReviewArgs]) (bool, error) {
	arg := func(name string) string { return store.RiverJobArg(db.Dialect, name) }
	a := job.Args
	var n int
	err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = $1 AND id > $2
		AND `+arg("repository")+` = $3 AND `+arg("environment")+` = $4 AND CAST(`+arg("run_id")+` AS BIGINT) = $5`,
		ReviewArgs{}.Kind(), job.ID, a.Repository, a.Environment, a.RunID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("newer protection rule requests of run %d in %s: %w", a.RunID, a.Repository, err)
	}
	return n > 0, nil
}

// posted is the answer an attempt of the job posts, kept as the job's
// output (River stores it whether the attempt succeeds or fails).
type posted struct {
	State   string `json:"state"`
	Comment string `json:"comment"`
}

// postedBefore is the answer an earlier attempt of job posted, if any.
func postedBefore(job *river.Job[ReviewArgs]) (Decision, bool) {
	var p posted
	if out := job.Output(); len(out) == 0 || json.Unmarshal(out, &p) != nil || p.State == "" {
		return Decision{}, false
	}
	return Decision{State: p.State, Comment: p.Comment}, true
}

// answer keeps dec as the job's answer before it posts it, so that a retry
// posts the same one: GitHub may have taken it whatever the post returned.
// Not when GitHub refused it for its rate limit, which takes nothing: the
// answer is forgotten, the job waits for the limit to lift (Work) and then
// decides again from the config and verdicts of then (a freeze may have
// begun during the wait), as it would have decided had it first posted
// then. River stores the output as the attempt ends, so the last one
// recorded in it is the one kept.
func (w *reviewWorker) answer(ctx context.Context, gh *github.Client, a ReviewArgs, dec Decision) error {
	if err := river.RecordOutput(ctx, posted{State: dec.State, Comment: dec.Comment}); err != nil {
		return fmt.Errorf("keep the answer to run %d in %s: %w", a.RunID, a.Repository, err)
	}
	err := w.post(ctx, gh, a, dec)
	if ghlimit.Limited(err) {
		if ferr := river.RecordOutput(ctx, posted{}); ferr != nil {
			return errors.Join(err, fmt.Errorf("forget the answer to run %d in %s: %w", a.RunID, a.Repository, ferr))
		}
	}
	return err
}

// rules reads the default branch's config (never the deploying ref's) and
// returns every app's environment with the event's name.
// broken, when not empty, says why the config cannot be used.
func (w *reviewWorker) rules(ctx context.Context, gh *github.Client, a ReviewArgs) (rules []Rule, broken string, err error) {
	res, err := w.loader.Load(ctx, gh.Repositories, a.Repository, "")
	if err != nil {
		return nil, "", err
	}
	if res.Found && res.Config == nil {
		return nil, fmt.Sprintf("%s does not load (%d problems; run `ripcord validate`), so it cannot approve a deployment", res.Source, len(res.Problems)), nil
	}
	if !res.Valid() {
		return nil, "", nil
	}
	for _, app := range res.Config.AppNames() {
		e, ok := res.Config.Environment(app, a.Environment)
		if !ok {
			continue
		}
		g, _ := res.Config.GatesFor(app, a.Environment)
		rules = append(rules, Rule{App: app, Environment: a.Environment, Enabled: e.ProtectionRule.Enabled,
			Gates: e.ProtectionRule.Gates, Required: gatesflow.CheckNames(g), Regions: e.Regions,
			Freezes: freezesOf(e.Freezes, e.Plan)})
	}
	return rules, "", nil
}

func freezesOf(env []rollout.Freeze, plan *rollout.Plan) []rollout.Freeze {
	if plan != nil {
		return plan.Freezes // the environment's and the rollout's
	}
	return env
}

func needsGates(rules []Rule) bool {
	for _, r := range rules {
		if r.Enabled && r.Gates {
			return true
		}
	}
	return false
}

func (w *reviewWorker) post(ctx context.Context, gh *github.Client, a ReviewArgs, dec Decision) error {
	owner, name, _ := strings.Cut(a.Repository, "/")
	comment := shorten(dec.Comment, maxComment)
	_, err := gh.Actions.ReviewCustomDeploymentProtectionRule(ctx, owner, name, a.RunID, &github.ReviewCustomDeploymentProtectionRuleRequest{
		EnvironmentName: a.Environment, State: dec.State, Comment: comment})
	if refused(err) {
		// The run was cancelled, the rule waits no more (answered already),
		// or the App may not answer: asking again gets the same refusal.
		w.deps.Log.Warn("GitHub refused the deployment protection rule's answer", "repository", a.Repository,
			"environment", a.Environment, "run_id", a.RunID, "state", dec.State, "error", err)
		return river.JobCancel(fmt.Errorf("GitHub refused the answer to the protection rule of run %d in %s (%s): %w",
			a.RunID, a.Repository, dec.State, err))
	}
	if err != nil {
		return fmt.Errorf("answer the protection rule of run %d in %s (%s): %w", a.RunID, a.Repository, dec.State, err)
	}
	w.reviews.WithLabelValues(dec.State).Inc()
	w.deps.Log.Info("deployment protection rule answered", "repository", a.Repository, "environment", a.Environment,
		"run_id", a.RunID, "state", dec.State, "comment", comment)
	return nil
}

// refused reports a 4xx answer other than GitHub's rate limit (a 429, or
// a 403 that is one), which the job waits out (Work).
func refused(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode >= 400 && er.Response.StatusCode < 500 &&
		er.Response.StatusCode != http.StatusTooManyRequests && !ghlimit.Limited(err)
}

// gateRuns lists the gate check runs of sha and, for each app/environment
// of rules that has no evaluation of its own on sha, those of the head of
// each pull request that contains sha (a merge commit carries no gate runs;
// its pull request's head does). The fallback is per app/environment: the
// merge commit carrying another app's evaluation, or another environment's,
// says nothing about this one's, which may live on the head. Only runs this
// App (appID) made count: a workflow's token or another App can make a
// check run named ripcord/provenance too. And only the runs of an
// evaluation of an environment the review is for (one of rules that
// requires gates) count: every app and environment names its runs
// ripcord/<gate>, so another environment's verdict on the same commit must
// not approve or refuse this one. Newest first.
func gateRuns(ctx context.Context, gh *github.Client, appID int64, repository, sha string, rules []Rule) ([]CheckRun, error) {
	if sha == "" {
		return nil, nil
	}
	runs, err := checkRuns(ctx, gh, appID, repository, sha, rules)
	if err != nil {
		return nil, err
	}
	var elsewhere []Rule // rules with no evaluation on sha itself
	for _, r := range rules {
		scope := r.App + "/" + r.Environment
		if r.Enabled && r.Gates && !slices.ContainsFunc(runs, func(c CheckRun) bool { return c.Scope == scope }) {
			elsewhere = append(elsewhere, r)
		}
	}
	if len(elsewhere) == 0 {
		return runs, nil
	}
	prs, err := pullRequestsWith(ctx, gh, repository, sha)
	if err != nil {
		return nil, err
	}
	for _, pr := range prs {
		head := pr.GetHead().GetSHA()
		if head == "" || head == sha {
			continue
		}
		more, err := checkRuns(ctx, gh, appID, repository, head, elsewhere)
		if err != nil {
			return nil, err
		}
		runs = append(runs, more...)
	}
	// Newest first across the commits too: the newest evaluation of a
	// scope is the one of its first run.
	slices.SortStableFunc(runs, func(a, b CheckRun) int { return cmp.Compare(b.ID, a.ID) })
	return runs, nil
}

// pullRequestsWith lists every pull request that contains sha, following
// the pages (GitHub lists 30 a page unless asked for up to 100).
func pullRequestsWith(ctx context.Context, gh *github.Client, repository, sha string) ([]*github.PullRequest, error) {
	owner, name, _ := strings.Cut(repository, "/")
	opts := &github.ListOptions{PerPage: 100}
	var out []*github.PullRequest
	for {
		prs, resp, err := gh.PullRequests.ListPullRequestsWithCommit(ctx, owner, name, sha, opts)
		if err != nil {
			return nil, fmt.Errorf("list pull requests of %s in %s: %w", sha, repository, err)
		}
		out = append(out, prs...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// checkRuns lists every check run of sha with filter=all, following the
// pages: GitHub's default filter=latest keeps only the newest run of each
// name, which may be another environment's evaluation, hiding this one's.
// It keeps this App's runs of the rules' evaluations (by external id, as
// gatesflow gives it), newest first (by id: GitHub numbers runs in
// creation order), each with its evaluation's app/environment as Scope.
func checkRuns(ctx context.Context, gh *github.Client, appID int64, repository, sha string, rules []Rule) ([]CheckRun, error) {
	owner, name, _ := strings.Cut(repository, "/")
	opts := &github.ListCheckRunsOptions{AppID: &appID, Filter: github.String("all"), ListOptions: github.ListOptions{PerPage: 100}}
	var out []CheckRun
	for {
		res, resp, err := gh.Checks.ListCheckRunsForRef(ctx, owner, name, sha, opts)
		if err != nil {
			return nil, fmt.Errorf("list check runs of %s in %s: %w", sha, repository, err)
		}
		for _, cr := range res.CheckRuns {
			if cr.GetApp().GetID() != appID {
				continue
			}
			scope, ok := scopeOf(cr.GetExternalID(), repository, cr.GetHeadSHA(), rules)
			if !ok {
				continue
			}
			out = append(out, CheckRun{ID: cr.GetID(), Name: cr.GetName(), Status: cr.GetStatus(), Conclusion: cr.GetConclusion(),
				URL: cr.GetHTMLURL(), HeadSHA: cr.GetHeadSHA(), Scope: scope, Evaluation: cr.GetExternalID(),
				Seq: gatesflow.EvaluationSeq(cr.GetExternalID())})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.ListOptions.Page = resp.NextPage
	}
	slices.SortStableFunc(out, func(a, b CheckRun) int { return cmp.Compare(b.ID, a.ID) })
	return out, nil
}

// scopeOf names the rule ("app/environment") whose gate evaluation made
// the run with externalID, among the rules that require gates.
func scopeOf(externalID, repository, headSHA string, rules []Rule) (string, bool) {
	for _, r := range rules {
		if r.Enabled && r.Gates && gatesflow.EvaluationOf(externalID, repository, headSHA, r.App, r.Environment) {
			return r.App + "/" + r.Environment, true
		}
	}
	return "", false
}

// shorten cuts s to at most max bytes, ending in "…" when it was cut, and
// never inside a UTF-8 sequence: app and environment names in a comment may
// be any text.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
