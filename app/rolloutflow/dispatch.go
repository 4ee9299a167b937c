package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
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
	gh, err := x.deps.GitHub.NewInstallationClient(r.InstallationID)
	if err == nil {
		runID, err = dispatchWorkflow(ctx, gh, r.Repository, workflow, r.Snapshot.Settings.Ref, inputs)
	}
	switch {
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
// GitHub created (0 when it answered without details).
func dispatchWorkflow(ctx context.Context, gh *github.Client, repository, workflow, ref string, inputs map[string]any) (int64, error) {
	owner, repo, _ := strings.Cut(repository, "/")
	if ref == "" {
		r, _, err := gh.Repositories.Get(ctx, owner, repo)
		if err != nil {
			return 0, fmt.Errorf("default branch of %s: %w", repository, err)
		}
		ref = r.GetDefaultBranch()
	}
	u := fmt.Sprintf("repos/%s/%s/actions/workflows/%s/dispatches", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(workflow))
	req, err := gh.NewRequest("POST", u, dispatchRequest{Ref: ref, Inputs: inputs, ReturnRunDetails: true})
	if err != nil {
		return 0, fmt.Errorf("dispatch %s on %s: %w", workflow, repository, err)
	}
	var out dispatchResponse
	if _, err := gh.Do(ctx, req, &out); err != nil {
		return 0, fmt.Errorf("dispatch %s on %s@%s: %w", workflow, repository, ref, err)
	}
	return out.WorkflowRunID, nil
}
