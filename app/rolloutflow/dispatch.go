package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/rollout"
)

// dispatch claims ref, stores the machine with it, and only then asks
// GitHub for the run: a batch whose claim is stored is never dispatched
// again. A crash between the claim and GitHub's answer leaves the batch
// "dispatching": its run, if GitHub made one, is found by its name and
// adopted (adopt.go); otherwise queue_timeout fails the pass rather than
// risk a second deploy of the same batch. A batch GitHub answered 404 for
// because the App can no longer read the repository, one of an
// installation GitHub refuses a token (deleted or suspended), or one whose
// token or default branch GitHub did not answer for, is not dispatched and
// not failed: dispatch returns when to try it again (withdraw). So is one
// GitHub refused for its rate limit, dispatched again after the reset
// (withdrawLimited); while the installation's stored limit holds, the
// batch is not even claimed (ratewait.go).
func (x *executor) dispatch(ctx context.Context, r *Rollout, ref Ref, evs []Event) (time.Time, error) {
	name, inputs := dispatchInputs(r, ref)
	var claimed bool
	var lim installationLimit
	now := x.deps.Now()
	err := x.commit(ctx, r, evs, func(tx *sql.Tx) error {
		var err error
		if lim, err = readLimit(ctx, tx, r.InstallationID); err != nil {
			return err
		}
		if lim.holds(now) {
			// The dispatch would be spent against the limit: the batch
			// is not claimed, and is dispatched after the reset.
			return auditLimited(ctx, tx, r.ID, lim, now, notDispatched(name, r.InstallationID, lim.reset))
		}
		claimed, err = claimBatch(ctx, tx, r.ID, ref, name, now)
		return err
	})
	if err == nil && lim.holds(now) {
		x.deps.Log.Warn("rollout batch not dispatched: GitHub's rate limit; dispatched after its reset", "rollout", r.ID,
			"batch", name, "installation", r.InstallationID, "until", lim.reset.UTC().Format(time.RFC3339))
		r.limitedUntil = lim.reset
		return lim.reset, nil
	}
	if err != nil || !claimed {
		return time.Time{}, err
	}
	if x.afterClaim != nil {
		x.afterClaim(r.ID)
	}
	if aborted, err := x.abortedAfterClaim(ctx, r, ref, name); err != nil || aborted {
		return time.Time{}, err
	}
	workflow := r.Snapshot.Settings.Workflow
	if ref.Kind == KindPrepare {
		workflow = r.Snapshot.Settings.Prepare
	}
	state, detail, runID := RunQueued, "", int64(0)
	sent := false
	gh, err := x.deps.GitHub.NewInstallationClient(r.InstallationID)
	if err == nil {
		runID, sent, err = dispatchWorkflow(ctx, gh, r.Repository, workflow, r.Snapshot.Settings.Ref, inputs)
	}
	if until, ok := rateLimited(err, x.deps.Now()); ok {
		// GitHub said "later" (on the dispatch, the default branch or the
		// installation's token), not "no": no run was started.
		return x.withdrawLimited(ctx, r, ref, name, until, err)
	}
	// GitHub answered (a run, or a refusal) after the reset of a limit
	// met before: the episode is over.
	lifted := !lim.reset.IsZero() && (err == nil || refused(err))
	if status, ok := installationRefused(err); ok {
		// The installation was deleted or suspended: no request of its
		// went out, so no run was started. Access lost, as for a
		// repository removed from the installation.
		return x.withdraw(ctx, r, ref, name, fmt.Sprintf("%s not dispatched: %s: it is dispatched once access is back",
			name, tokenRefusal(r.InstallationID, status)), err)
	}
	if tokenUnanswered(err) {
		// No token, so no request went out: an outage, as for an
		// unanswered default branch.
		return x.withdraw(ctx, r, ref, name, "", err)
	}
	if err != nil && notFound(err) {
		// A 404 on the dispatch is a workflow GitHub does not know, or a
		// repository the App can no longer read (removed from the
		// installation): only the repository's own answer tells them
		// apart. A 404 before the dispatch was on the repository itself.
		lost, rerr := true, error(nil)
		if sent {
			owner, repo, _ := strings.Cut(r.Repository, "/")
			lost, rerr = x.accessLost(ctx, gh, owner, repo)
		}
		if lost || rerr != nil {
			msg := ""
			if lost {
				msg = fmt.Sprintf("%s not dispatched: GitHub answers 404 on the dispatch of %s and on %s, which the App can no longer read "+
					"(removed from the installation?): it is dispatched once access is back", name, workflow, r.Repository)
			}
			return x.withdraw(ctx, r, ref, name, msg, errors.Join(err, rerr))
		}
	}
	var branch *branchError
	if err != nil && errors.As(err, &branch) && !refused(err) {
		// The default branch to dispatch on is unanswered (5xx, no
		// answer): a GitHub outage, not a refusal, and no run was started.
		return x.withdraw(ctx, r, ref, name, "", err)
	}
	switch {
	case err != nil && notFound(err):
		// The repository reads: GitHub has no such workflow. A refusal,
		// the batch fails, saying what to look at.
		state, detail = RunFailure, "dispatch: "+workflowNotFound(workflow, r.Repository)
	case err != nil && sent && !refused(err):
		// No answer, or a 5xx: GitHub may have accepted the dispatch and
		// started the run all the same (ghclient does not repeat a
		// dispatch for that reason). Failing the batch would fail a stage
		// whose deploy may be running, and rollback-wave would dispatch
		// its rollback beside it. So it stays dispatching, as after a
		// crash: its run is adopted by its name, or queue_timeout fails
		// the pass (adopt.go).
		state, detail = RunDispatching, "dispatch: "+err.Error()
	case err != nil:
		// GitHub said no (or could not be asked): the batch fails, it is
		// not sent again.
		state, detail = RunFailure, "dispatch: "+err.Error()
	case runID == 0:
		// Accepted without the run's details (a GitHub that does not know
		// return_run_details): no event can be matched to the batch, so
		// it stays dispatching and its run is adopted by name (adopt.go).
		state = RunDispatching
	}
	x.deps.Log.Info("rollout batch dispatched", "rollout", r.ID, "batch", name, "workflow", workflow, "run_id", runID, "error", detail)
	return time.Time{}, x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := setBatch(ctx, tx, r.ID, ref, runID, state, detail, x.deps.Now()); err != nil {
			return err
		}
		if lifted {
			if err := liftLimit(ctx, tx, r.InstallationID, x.deps.Now()); err != nil {
				return err
			}
		}
		msg := fmt.Sprintf("%s dispatched: %s run %d", name, workflow, runID)
		switch {
		case state == RunDispatching && detail != "":
			msg = fmt.Sprintf("%s: GitHub's answer to the dispatch of %s was an error (%s); the run it may have started is looked up by its name",
				name, workflow, strings.TrimPrefix(detail, "dispatch: "))
		case detail != "":
			msg = name + " not dispatched: " + detail
		case runID == 0:
			msg = fmt.Sprintf("%s dispatched: %s, GitHub did not say which run: it is looked up by its name", name, workflow)
		}
		if err == nil {
			// The end of an outage the audit said (withdraw).
			since, ok, err := unansweredSince(ctx, tx, r.ID)
			if err != nil {
				return err
			}
			if ok {
				msg += fmt.Sprintf(" (GitHub answers again; it had not since %s)", since.UTC().Format(time.RFC3339))
			}
		}
		return insertAudit(ctx, tx, r.ID, x.deps.Now(), "dispatch", msg)
	})
}

// abortedAfterClaim looks, just before the dispatch, for an abort stored
// after the claim's commit (one stored before made that commit lose): the
// operator was told the rollout is aborted, so the batch is not sent. Its
// claim is taken back, and the tick, going on, applies the abort with
// nothing of the batch to drain or roll back. An abort stored while the
// dispatch request is already on its way cannot stop it: that batch runs
// and is drained, or rolled back, as any batch in flight at an abort.
func (x *executor) abortedAfterClaim(ctx context.Context, r *Rollout, ref Ref, name string) (bool, error) {
	var by string
	if err := x.deps.DB.Write.QueryRowContext(ctx, `SELECT abort_by FROM rollouts WHERE id = $1`, r.ID).Scan(&by); err != nil {
		return false, fmt.Errorf("abort of rollout %s: %w", r.ID, err)
	}
	if by == "" {
		return false, nil
	}
	return true, x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := unclaimBatch(ctx, tx, r.ID, ref); err != nil {
			return err
		}
		return insertAudit(ctx, tx, r.ID, x.deps.Now(), "dispatch",
			fmt.Sprintf("%s not dispatched: @%s aborted the rollout as it was about to be", name, by))
	})
}

// dispatchInputs are the workflow_dispatch inputs of ref: the release, where
// the batch is in the plan, its targets, the version and the region whose
// runners run it (for runs-on), and the parallelism the matrix may use.
func dispatchInputs(r *Rollout, ref Ref) (string, map[string]any) {
	in := map[string]any{"release_id": r.ReleaseID, "version": r.Version}
	if ref.Kind == KindPrepare {
		return "prepare", in
	}
	st := r.Snapshot.Plan.Stages[ref.Stage]
	p := st.Passes[ref.Pass]
	b := p.Batches[ref.Batch]
	name := b.Name
	if ref.Kind == KindRollback {
		name = rollout.StepName("rollback", p.Name, ref.Batch)
		in["version"] = r.Previous
	}
	targets, _ := json.Marshal(b.Hosts)
	in["stage"], in["pass"], in["batch"] = st.Name, p.Name, name
	in["targets"], in["region"], in["parallel"] = string(targets), p.Region, strconv.Itoa(b.Parallel)
	return name, in
}

// dispatchRequest is the body of a workflow dispatch. go-github v66 has no
// return_run_details, so the request is built by hand.
type dispatchRequest struct {
	Ref              string         `json:"ref"`
	Inputs           map[string]any `json:"inputs,omitempty"`
	ReturnRunDetails bool           `json:"return_run_details"`
}

type dispatchResponse struct {
	WorkflowRunID int64 `json:"workflow_run_id"`
}

// dispatchWorkflow starts workflow on ref of repository and returns the run
// GitHub created (0 when it answered without details). sent reports
// whether the dispatch itself was sent: an error before it (the default
// branch could not be read) started no run.
func dispatchWorkflow(ctx context.Context, gh *github.Client, repository, workflow, ref string, inputs map[string]any) (runID int64, sent bool, err error) {
	owner, repo, _ := strings.Cut(repository, "/")
	if ref == "" {
		r, _, err := gh.Repositories.Get(ctx, owner, repo)
		if err != nil {
			return 0, false, &branchError{repository: repository, err: err}
		}
		ref = r.GetDefaultBranch()
	}
	u := fmt.Sprintf("repos/%s/%s/actions/workflows/%s/dispatches", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(workflow))
	req, err := gh.NewRequest("POST", u, dispatchRequest{Ref: ref, Inputs: inputs, ReturnRunDetails: true})
	if err != nil {
		return 0, false, fmt.Errorf("dispatch %s on %s: %w", workflow, repository, err)
	}
	var out dispatchResponse
	if _, err := gh.Do(ctx, req, &out); err != nil {
		return 0, true, fmt.Errorf("dispatch %s on %s@%s: %w", workflow, repository, ref, err)
	}
	return out.WorkflowRunID, true, nil
}

// workflowNotFound says what a dispatch 404 is when the repository reads
// (a batch's, a probe round's): GitHub has no such workflow there.
func workflowNotFound(workflow, repository string) string {
	return fmt.Sprintf("workflow %s not found in %s: GitHub answers 404 on its dispatch, "+
		"and the repository reads (is .github/workflows/%s on its default branch?)", workflow, repository, workflow)
}

// branchError is a default branch dispatchWorkflow could not read: no
// dispatch was sent.
type branchError struct {
	repository string
	err        error
}

func (e *branchError) Error() string {
	return fmt.Sprintf("default branch of %s: %v", e.repository, e.err)
}

func (e *branchError) Unwrap() error { return e.err }

// withdraw takes back the claim of ref, whose dispatch GitHub did not
// start a run for, for a reason that is not a refusal of the batch: the
// App lost access, or GitHub did not answer before the dispatch was sent.
// Nothing is known against the batch, so it is neither failed (no
// on_failure, no rollback waves that could not be dispatched either) nor
// left dispatching (to fail at queue_timeout). The machine dispatches it
// again on the tick at the time returned, the next poll. lost, when not
// empty, says why the App has no access (to the repository or to the
// installation): the rollout's audit says it once
// (access-lost) and the log on every try; otherwise GitHub could not be
// asked (5xx, no answer): the log says so on every try, and the audit
// once per outage (unanswered, auditUnanswered), however long it lasts,
// since the rollout, still running, shows nothing else of it.
func (x *executor) withdraw(ctx context.Context, r *Rollout, ref Ref, name, lost string, cause error) (time.Time, error) {
	msg := lost
	if lost != "" {
		x.deps.Log.Warn("rollout batch not dispatched: the App lost access", "rollout", r.ID, "batch", name,
			"repository", r.Repository, "installation", r.InstallationID, "error", cause)
	} else {
		x.deps.Log.Warn("rollout batch not dispatched: GitHub did not answer; tried again on the next poll",
			"rollout", r.ID, "batch", name, "error", cause)
	}
	err := x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := unclaimBatch(ctx, tx, r.ID, ref); err != nil {
			return err
		}
		if lost == "" {
			return auditUnanswered(ctx, tx, r.ID, x.deps.Now(), fmt.Sprintf("%s not dispatched: GitHub did not answer (%s): "+
				"asked for again at each poll", name, strings.ReplaceAll(cause.Error(), "\n", "; ")))
		}
		// No check run update: the App cannot write to the repository.
		return auditOnce(ctx, tx, r.ID, x.deps.Now(), "access-lost", msg)
	})
	if err != nil {
		return time.Time{}, err
	}
	return x.deps.Now().Add(runPoll), nil
}

// installationRefused reports whether err is GitHub refusing the App a
// token for the installation, and with which status: 404 (the installation
// was deleted) or 403 (suspended; a 403 that is a rate limit is not). The
// request err is about was not sent.
func installationRefused(err error) (int, bool) {
	var he *ghinstallation.HTTPError
	if !errors.As(err, &he) || he.Response == nil {
		return 0, false
	}
	if _, limited := rateLimited(err, time.Now()); limited {
		return 0, false
	}
	status := he.Response.StatusCode
	return status, status == http.StatusNotFound || status == http.StatusForbidden
}

// tokenUnanswered reports whether err is GitHub giving no answer (none, or
// a 5xx) on the App's request for an installation token: the request err
// is about was not sent.
func tokenUnanswered(err error) bool {
	var he *ghinstallation.HTTPError
	return errors.As(err, &he) && (he.Response == nil || he.Response.StatusCode >= 500)
}

// notFound reports whether GitHub answered err's request with a 404.
func notFound(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound
}

// refused reports whether GitHub answered a dispatch with a refusal, a
// 4xx (the workflow or an input is unknown, no permission, a rate limit):
// no run was started. A 5xx or no answer at all says nothing either way.
// A batch's dispatch tells a rate limit (rateLimited) apart first.
func refused(err error) bool {
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &rl) || errors.As(err, &abuse) {
		return true
	}
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode >= 400 && er.Response.StatusCode < 500
}
