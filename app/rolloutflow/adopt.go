package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/internal/store"
)

// A crash between GitHub accepting a dispatch and the run id being stored
// leaves the batch "dispatching" although its run exists. The run is
// found again by its name: the deploy workflow names its runs
//
//	run-name: ${{ inputs.batch }} ${{ inputs.release_id }}
//
// (RunName), and a tick that finds a batch still dispatching after
// dispatchGrace lists the workflow's dispatched runs created since the
// claim and adopts the one so titled. A workflow whose runs bear only the
// batch name is adopted too when exactly one run matches; with none, or
// several, the batch is left to its queue_timeout as before, since
// dispatching it again could deploy it twice.

// dispatchGrace is how long a batch may be "dispatching" before a tick
// takes it for one whose dispatch was cut short: well past the time a
// dispatch request may take, so that no tick adopts a run another tick is
// still dispatching.
const dispatchGrace = 2 * time.Minute

// clockSkew allows for GitHub's clock being behind ripcord's when runs
// created since a claim are listed.
const clockSkew = time.Minute

// RunName is the run-name the deploy workflow gives a batch's run, its
// display title: the batch's name, then the release (unique per rollout).
func RunName(batch, releaseID string) string { return batch + " " + releaseID }

// adoptRuns adopts the runs of the rollout's batches left dispatching.
// A batch whose runs GitHub could not list (5xx, no answer, a 404 of a
// repository the App can no longer read, no installation token, a rate
// limit) is added to a.unread: it is looked up again on the next tick (after
// the reset, for a rate limit), holds neither the other batches nor the
// machine, and is not failed at queue_timeout meanwhile.
func (x *executor) adoptRuns(ctx context.Context, r Rollout, runs map[Ref]Run, a *asking) error {
	now := x.deps.Now()
	var gh *github.Client
	var lost *bool // the App can no longer read the repository; nil: not asked
	tokenless := false
	for ref, run := range runs {
		if !toAdopt(run, now) {
			continue
		}
		if tokenless || a.limited {
			a.unread[ref] = true
			continue
		}
		if gh == nil {
			var err error
			if gh, err = x.deps.GitHub.NewInstallationClient(r.InstallationID); err != nil {
				return fmt.Errorf("github client for installation %d: %w", r.InstallationID, err)
			}
		}
		err := x.adoptRun(ctx, gh, r, ref, run)
		var ghErr *adoptListError
		if errors.As(err, &ghErr) && ctx.Err() == nil {
			if until, ok := rateLimited(err, x.deps.Now()); ok {
				// GitHub said "later" (on the list, or on the
				// installation's token): no batch is looked up before
				// the reset.
				if err := x.limitMet(ctx, a, r, until, err); err != nil {
					return err
				}
				a.unread[ref] = true
				continue
			}
			// No token (the installation was deleted or suspended, or
			// GitHub did not answer for it): no batch can be looked up
			// on this tick, and none is failed at queue_timeout for it.
			var terr error
			if tokenless, terr = x.noToken(ctx, r, err, runsNotRead(r)); terr != nil {
				return terr
			}
			if tokenless {
				a.unread[ref] = true
				continue
			}
		}
		switch {
		case err == nil:
			a.answered = true
		case errors.As(err, &ghErr) && ctx.Err() == nil:
			failed, err := x.notAdopted(ctx, gh, a, r, ref, ghErr, &lost)
			if err != nil {
				return err
			}
			if !failed {
				a.unread[ref] = true
			}
		default:
			return err
		}
	}
	return nil
}

// toAdopt reports whether run is a batch whose dispatch a tick takes for
// cut short, its run to be looked up by its name.
func toAdopt(run Run, now time.Time) bool {
	return run.State == RunDispatching && !now.Before(run.DispatchedAt.Add(dispatchGrace))
}

// notAdopted reports a batch whose runs GitHub did not list. GitHub
// answers 404 on the runs of a repository the App can no longer read
// (removed from the installation), which only the repository's own answer
// (asked once per tick, kept in lost) tells from a workflow it does not
// know: access lost is said once in the audit (access-lost), and the log
// says it on every tick, as for any other failure of the list. A 404
// while the repository reads is a workflow removed or renamed since the
// dispatch: its runs can never be listed, so the batch fails (failed),
// as a dispatch of a missing workflow does, rather than wait for ever. A
// repository GitHub does not answer for its rate limit tells nothing
// either: no batch is looked up before the reset (a.limited).
func (x *executor) notAdopted(ctx context.Context, gh *github.Client, a *asking, r Rollout, ref Ref, err *adoptListError, lost **bool) (bool, error) {
	if notFound(err) && *lost == nil {
		owner, name, _ := strings.Cut(r.Repository, "/")
		l, rerr := x.accessLost(ctx, gh, owner, name)
		if until, ok := rateLimited(rerr, x.deps.Now()); ok && ctx.Err() == nil {
			return false, x.limitMet(ctx, a, r, until, rerr)
		}
		if rerr == nil {
			*lost = &l
		}
	}
	if notFound(err) && *lost != nil && !**lost {
		return true, x.workflowGone(ctx, r, ref, err)
	}
	if notFound(err) && *lost != nil && **lost {
		x.deps.Log.Warn("rollout batch not adopted: no access to its repository", "rollout", r.ID, "repository", r.Repository,
			"error", err)
		msg := fmt.Sprintf("runs of %s not looked up: GitHub answers 404 on them and on %s, which the App can no longer read "+
			"(removed from the installation?): their batches are left as they were until access is back", r.Repository, r.Repository)
		return false, x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
			// No check run update: the App cannot write to the repository.
			return auditOnce(ctx, tx, r.ID, x.deps.Now(), "access-lost", msg)
		})
	}
	x.deps.Log.Warn("rollout batch not adopted: its runs are looked up again on the next tick", "rollout", r.ID,
		"error", err)
	return false, nil
}

// workflowGone fails ref, left dispatching, whose workflow GitHub answers
// 404 for while the repository reads; on_failure then applies as for any
// failed batch.
func (x *executor) workflowGone(ctx context.Context, r Rollout, ref Ref, le *adoptListError) error {
	detail := fmt.Sprintf("adoption: workflow %s not found in %s: GitHub answers 404 on the list of its runs, "+
		"and the repository reads (is .github/workflows/%s on its default branch?)", le.workflow, r.Repository, le.workflow)
	x.deps.Log.Warn("rollout batch failed: its workflow is gone", "rollout", r.ID, "batch", le.name,
		"workflow", le.workflow, "error", le)
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE rollout_batches SET state = $1, detail = $2, updated_at = $3
			WHERE rollout_id = $4 AND kind = $5 AND stage = $6 AND pass = $7 AND batch = $8 AND state = $9`,
			RunFailure, detail, store.Micros(x.deps.Now()), r.ID, ref.Kind, ref.Stage, ref.Pass, ref.Batch, RunDispatching)
		if err != nil {
			return fmt.Errorf("fail %s of rollout %s: %w", le.name, r.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		return insertAudit(ctx, tx, r.ID, x.deps.Now(), "dispatch", le.name+" not adopted: "+detail)
	})
}

// adoptListError is GitHub's failure to list the runs of workflow, to
// adopt the run of batch name.
type adoptListError struct {
	workflow, name string
	err            error
}

func (e *adoptListError) Error() string { return e.err.Error() }
func (e *adoptListError) Unwrap() error { return e.err }

func (x *executor) adoptRun(ctx context.Context, gh *github.Client, r Rollout, ref Ref, run Run) error {
	name, _ := dispatchInputs(&r, ref)
	workflow := r.Snapshot.Settings.Workflow
	if ref.Kind == KindPrepare {
		workflow = r.Snapshot.Settings.Prepare
	}
	since := run.DispatchedAt.Add(-clockSkew)
	runs, err := listRunsSince(ctx, gh, r.Repository, workflow, r.Snapshot.Settings.Ref, since)
	if err != nil {
		return &adoptListError{workflow, name, fmt.Errorf("runs of %s for %s of rollout %s: %w", workflow, name, r.ID, err)}
	}
	found, err := x.matchRun(ctx, r, runs, name, since)
	if err != nil || found == nil {
		return err
	}
	state, detail := runState(found)
	if state == "" {
		state = RunQueued
	}
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE rollout_batches SET run_id = $1, state = $2, detail = $3, updated_at = $4
			WHERE rollout_id = $5 AND kind = $6 AND stage = $7 AND pass = $8 AND batch = $9 AND state = $10`,
			found.GetID(), state, detail, store.Micros(x.deps.Now()), r.ID, ref.Kind, ref.Stage, ref.Pass, ref.Batch, RunDispatching)
		if err != nil {
			return fmt.Errorf("adopt run %d for %s of rollout %s: %w", found.GetID(), name, r.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		return insertAudit(ctx, tx, r.ID, x.deps.Now(), "dispatch", fmt.Sprintf(
			"%s: run %d adopted: its dispatch was accepted but its run id was never stored (a restart, or GitHub did not return it)", name, found.GetID()))
	})
}

// maxRunPages bounds the pages of runs listed for one adoption: GitHub
// returns at most 1,000 runs (ten pages of 100) for a filtered list.
const maxRunPages = 10

// listRunsSince lists the runs of workflow dispatched on branch ("" for
// any), page after page until one reaches back before `since`: on a busy
// repository the run of a batch can be far from the newest hundred, and a
// run not found leaves its batch to fail at queue_timeout. GitHub lists
// runs newest first. (Its created filter takes a range, ">=time", which
// GitHub's published description does not allow: only a date-time.)
func listRunsSince(ctx context.Context, gh *github.Client, repository, workflow, branch string, since time.Time) ([]*github.WorkflowRun, error) {
	owner, repo, _ := strings.Cut(repository, "/")
	opts := &github.ListWorkflowRunsOptions{Event: "workflow_dispatch", Branch: branch, ListOptions: github.ListOptions{PerPage: 100}}
	var out []*github.WorkflowRun
	for range maxRunPages {
		list, resp, err := gh.Actions.ListWorkflowRunsByFileName(ctx, owner, repo, workflow, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.WorkflowRuns...)
		n := len(list.WorkflowRuns)
		if resp.NextPage == 0 || n == 0 || list.WorkflowRuns[n-1].GetCreatedAt().Time.Before(since) {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// matchRun picks the run titled RunName(name, release), else the only run
// titled name, among runs created since `since` that no batch owns yet.
func (x *executor) matchRun(ctx context.Context, r Rollout, runs []*github.WorkflowRun, name string, since time.Time) (*github.WorkflowRun, error) {
	var exact, bare []*github.WorkflowRun
	for _, wr := range runs {
		if wr.GetCreatedAt().Time.Before(since) {
			continue
		}
		title := wr.GetDisplayTitle()
		if title != RunName(name, r.ReleaseID) && title != name {
			continue
		}
		if _, _, _, owned, err := batchOfRun(ctx, x.deps.DB.Read, r.Repository, wr.GetID()); err != nil || owned {
			if err != nil {
				return nil, err
			}
			continue
		}
		if title == name {
			bare = append(bare, wr)
		} else {
			exact = append(exact, wr)
		}
	}
	switch {
	case len(exact) == 1:
		return exact[0], nil
	case len(exact) == 0 && len(bare) == 1:
		return bare[0], nil
	}
	return nil, nil
}
