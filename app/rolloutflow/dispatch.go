package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/rollout"
)

// dispatch claims ref, stores the machine with it, and only then asks
// GitHub for the run: a batch whose claim is stored is never dispatched
// again. A crash between the claim and GitHub's answer leaves the batch
// "dispatching": its run, if GitHub made one, is found by its name and
// adopted (adopt.go); otherwise queue_timeout fails the pass rather than
// risk a second deploy of the same batch.
func (x *executor) dispatch(ctx context.Context, r *Rollout, ref Ref, evs []Event) error {
	name, inputs := dispatchInputs(r, ref)
	var claimed bool
	err := x.commit(ctx, r, evs, func(tx *sql.Tx) error {
		var err error
		claimed, err = claimBatch(ctx, tx, r.ID, ref, name, x.deps.Now())
		return err
	})
	if err != nil || !claimed {
		return err
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
	switch {
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
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if err := setBatch(ctx, tx, r.ID, ref, runID, state, detail, x.deps.Now()); err != nil {
			return err
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
		return insertAudit(ctx, tx, r.ID, x.deps.Now(), "dispatch", msg)
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
			return 0, false, fmt.Errorf("default branch of %s: %w", repository, err)
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

// refused reports whether GitHub answered a dispatch with a refusal, a
// 4xx (the workflow or an input is unknown, no permission, a rate limit):
// no run was started. A 5xx or no answer at all says nothing either way.
func refused(err error) bool {
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &rl) || errors.As(err, &abuse) {
		return true
	}
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode >= 400 && er.Response.StatusCode < 500
}
