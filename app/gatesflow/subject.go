package gatesflow

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/internal/outbound"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// evaluate judges one environment's release and returns its verdicts, for
// the caller to queue (work): slow gates get an in_progress run first,
// then every gate its verdict. seq is the evaluation's place among the
// evaluations of the commit (externalID). judged says whether the gates
// began with time left (gateContext): verdicts of gates that began after
// it ran out (a read before them took the attempt's time) are no
// judgement, and are queued only while the job has time (verdictContext).
func (w *evaluateWorker) evaluate(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, t target, pr *github.PullRequest, a EvaluateArgs, seq int64) (_ []ReportArgs, judged bool, _ error) {
	s := gates.Subject{
		Repository: a.Repository, App: t.app, Environment: t.env, Cluster: t.e.Cluster,
		HeadSHA: a.HeadSHA, PullRequest: a.PullRequest, Title: pr.GetTitle(), HeadBranch: pr.GetHead().GetRef(),
		Body: pr.GetBody(), ReleaseFile: t.e.Rollback.File, ReleaseFileContent: t.head,
	}
	for _, l := range pr.Labels {
		s.Labels = append(s.Labels, l.GetName())
	}
	if rel, err := gates.ReadRelease(t.head, t.e.Rollback.Fields); err == nil {
		s.Image, s.Digest = rel.Image, rel.Digest
	}
	rs, err := w.subjectRecords(ctx, t, cfg.Eligibility.Window)
	if err != nil {
		return nil, false, err
	}
	if s.Owner, err = w.deps.Records.Owner(ctx, t.app, t.env); err != nil {
		return nil, false, err
	}
	if a := gates.Assess(rs, nil, s, cfg.Eligibility.Window); a.Eligibility.Eligible {
		s = a
	} else {
		// The app's other environments and clusters, read only for a "no"
		// as the eligibility API reads them: they say where else the digest
		// ran healthy, so the check run gives the API's reason.
		elsewhere, err := w.deps.Records.List(ctx, records.Filter{App: t.app})
		if err != nil {
			return nil, false, fmt.Errorf("release records of %s: %w", t.app, err)
		}
		s = gates.Assess(rs, elsewhere, s, cfg.Eligibility.Window)
	}

	g, _ := cfg.GatesFor(t.app, t.env)
	var schema schemaFile
	if g.Values != nil && g.Values.Schema != "" {
		// The default branch's schema, like the config: a PR must not be
		// able to loosen the schema that judges it.
		schema.content, schema.err = ghclient.FileAt(ctx, gh, a.Repository, g.Values.Schema, "")
		if ghlimit.Limited(schema.err) {
			// Not the values gate's verdict (rateLimits): the job waits.
			return nil, false, fmt.Errorf("values.schema %s: %w", g.Values.Schema, schema.err)
		}
		if schema.err == nil && schema.content == nil {
			schema.err = fmt.Errorf("no such file on the default branch")
		}
	}
	var allow []string
	if w.deps.Config != nil {
		allow = w.deps.Config.Outbound.Allow
	}
	// The gates' own GitHub reads note the rate limits they meet, which
	// no verdict is written on (rateLimits).
	limits := &rateLimits{}
	// client reaches URLs the repository config chooses (policy_validation).
	sv := services{schema: schema, commits: commits{gh, limits}, scanning: scanning{gh, limits},
		client: outbound.Client(allow), registry: w.registry}
	if g.Provenance != nil || g.SBOM != nil || g.ImageScan != nil {
		sv.trust = readTrust(ctx, gh, a.Repository, g.Provenance)
		if ghlimit.Limited(sv.trust.Err) {
			return nil, false, sv.trust.Err // as the values schema's
		}
	}
	gs := build(g, t.e.Rollback.Fields, sv)
	if len(gs) == 0 {
		return nil, false, nil
	}
	key := externalID(a, t, seq)
	gctx, cancel := gateContext(ctx, reportMargin(w.timeout))
	defer cancel()
	judged = gctx.Err() == nil
	results := w.evaluateAll(gctx, gh, gs, s, func(g gates.Gate) ReportArgs {
		return ReportArgs{Repository: a.Repository, HeadSHA: a.HeadSHA, InstallationID: a.InstallationID,
			ExternalID: key, App: t.app, Environment: t.env, Seq: seq,
			Name: gates.CheckName(g.Name()), Status: "in_progress", Title: "evaluating"}
	})
	if err := limits.met(); err != nil {
		// None of this environment's verdicts is written: its gates are
		// evaluated again, all of them, once the limit lifts.
		return nil, false, err
	}
	reports := make([]ReportArgs, 0, len(results))
	for _, r := range results {
		reports = append(reports, completed(a, t, seq, key, r.Output))
		w.deps.Log.Info("gate evaluated", "repository", a.Repository, "pull_request", a.PullRequest, "app", t.app,
			"environment", t.env, "gate", r.Gate, "outcome", r.Verdict.Outcome, "conclusion", r.Output.Conclusion)
	}
	return reports, judged, nil
}

// gateContext is the context the gates are evaluated in: the job's, ending
// margin (reportMargin) before it. A gate still waiting then (a registry or policy
// service that does not answer) cannot decide and fails closed, and the
// job still has the time to queue its verdicts: were the gates to run out
// the job's own time, queueing would fail with it, attempt after attempt,
// and a gate shown in progress would stay so for ever.
func gateContext(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-margin))
}

// reportMargin is what an evaluation keeps of its job's time to queue its
// verdicts: a tenth of its timeout, at most 30 s.
func reportMargin(timeout time.Duration) time.Duration { return min(timeout/10, 30*time.Second) }

// subjectRecords are the records Assess judges the subject by, newest
// first: the target's newest releases that ran, window of them and
// ReadAhead more to say why an older one does not count, so that however
// many opened releases (pull requests not merged) are newer they cannot
// crowd the window out; and, as before, the target's newest records
// whatever their state, among which an opened one — the pull request's own
// release, registered before it ran — may name the commit of a new digest.
func (w *evaluateWorker) subjectRecords(ctx context.Context, t target, window int) ([]records.Record, error) {
	ran, err := w.deps.Records.NewestRan(ctx, window+eligibility.ReadAhead,
		[]records.Target{{App: t.app, Environment: t.env, Cluster: t.e.Cluster}})
	if err != nil {
		return nil, fmt.Errorf("release records of %s/%s: %w", t.app, t.env, err)
	}
	newest, err := w.deps.Records.Newest(ctx, t.app, t.env, t.e.Cluster, window+eligibility.ReadAhead)
	if err != nil {
		return nil, fmt.Errorf("release records of %s/%s: %w", t.app, t.env, err)
	}
	out := slices.Clone(newest)
	for _, r := range ran {
		if !slices.ContainsFunc(newest, func(n records.Record) bool { return n.ReleaseID == r.ReleaseID }) {
			out = append(out, r)
		}
	}
	// Both lists are newest first by created_at, then release_id: so is
	// their union (the releases that ran past the newest records are older
	// than all of them).
	slices.SortStableFunc(out, func(a, b records.Record) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ReleaseID, a.ReleaseID))
	})
	return out, nil
}

// externalID ties the runs of one evaluation together, so the verdict of a
// slow gate updates the in_progress run it started:
//
//	<repository>#<pull request>@<head sha> <app>/<environment> <trigger> seq=<n>
//
// seq orders the evaluations of a commit (EvaluationSeq): the evaluation
// job's id, given in the order evaluations are asked for (a push, a
// re-run) and kept by the job's retries. Evaluations finish in any order;
// the one asked for last is the newest, whenever it writes.
func externalID(a EvaluateArgs, t target, seq int64) string {
	return evaluationKey(a.Repository, a.PullRequest, a.HeadSHA, t.app, t.env, a.Trigger, seq)
}

// evaluationKey is externalID from its parts.
func evaluationKey(repository string, pullRequest int, head, app, env, trigger string, seq int64) string {
	return fmt.Sprintf("%s#%d@%s %s/%s %s%s%d", repository, pullRequest, head, app, env, trigger, seqMark, seq)
}

// seqMark ends an external id before its evaluation's sequence.
const seqMark = " seq="

// EvaluationSeq is the sequence of the evaluation that made a gate run
// with externalID: of two evaluations of a commit, the one with the higher
// is the newer. A run made before external ids carried one has 0, older
// than every run that has one.
func EvaluationSeq(externalID string) int64 {
	i := strings.LastIndex(externalID, seqMark)
	if i < 0 {
		return 0
	}
	// Digits only: ParseUint takes no sign, no space, no empty string.
	n, err := strconv.ParseUint(externalID[i+len(seqMark):], 10, 63)
	if err != nil {
		return 0
	}
	return int64(n)
}

// EvaluationOf reports whether externalID, the external id of a gate check
// run on headSHA in repository, is one of an evaluation of app's env: the
// deployment protection rule reads only the evaluation of the environment
// it reviews, as every app and environment names its runs ripcord/<gate>.
func EvaluationOf(externalID, repository, headSHA, app, env string) bool {
	_, rest, ok := splitExternalID(externalID, repository)
	return ok && strings.HasPrefix(rest, headSHA+" "+app+"/"+env+" ")
}

// pullRequestOf is the pull request whose evaluation on headSHA in
// repository made the run with externalID.
func pullRequestOf(externalID, repository, headSHA string) (int, bool) {
	n, rest, ok := splitExternalID(externalID, repository)
	if !ok || !strings.HasPrefix(rest, headSHA+" ") {
		return 0, false
	}
	return n, true
}

// splitExternalID reads "<repository>#<pull request>@<rest>".
func splitExternalID(externalID, repository string) (int, string, bool) {
	rest, ok := strings.CutPrefix(externalID, repository+"#")
	if !ok {
		return 0, "", false
	}
	pr, rest, ok := strings.Cut(rest, "@")
	if !ok || pr == "" || strings.Trim(pr, "0123456789") != "" {
		return 0, "", false
	}
	n, err := strconv.Atoi(pr)
	if err != nil || n <= 0 {
		return 0, "", false
	}
	return n, rest, true
}

// queueReports queues the check-run writes rs in one transaction.
func queueReports(ctx context.Context, d pipeline.Deps, rs []ReportArgs) error {
	if len(rs) == 0 {
		return nil
	}
	return queueReportsAnd(ctx, d, rs, nil)
}

// queueReportsAnd queues the check-run writes rs and runs then (when not
// nil) in one transaction.
func queueReportsAnd(ctx context.Context, d pipeline.Deps, rs []ReportArgs, then func(tx *sql.Tx) error) error {
	tx, err := d.DB.Write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("queue gate check runs: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, r := range rs {
		if err := queueReport(ctx, tx, d.River(), r); err != nil {
			return err
		}
	}
	if then != nil {
		if err := then(tx); err != nil {
			return err
		}
	}
	return commitTx(tx)
}

func commitTx(tx *sql.Tx) error {
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("queue gate check runs: %w", err)
	}
	return nil
}
