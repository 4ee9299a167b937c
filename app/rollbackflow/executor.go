package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/repoconfig"
)

// PullRequestExecutor carries out recovery's rollback decisions for
// environments with rollback mode pull-request: it queues the same job as
// every other way to start a rollback. Hand it to recoveryflow.Register.
func PullRequestExecutor(d pipeline.Deps) recoveryflow.RollbackExecutor {
	return executor{st: newStarter(d)}
}

type executor struct{ st *starter }

func (executor) Mode() string { return repoconfig.ModePullRequest }

// input is the rollback req asks for, decided from the episode (its
// config, its target). The config revision is the failed run's commit: the
// config that decided.
func (x executor) input(req recoveryflow.RollbackRequest) Input {
	ep := req.Episode
	return Input{
		Start: Start{App: ep.App, Environment: ep.Environment, Cluster: ep.Cluster, To: req.Target.ReleaseID, Reason: req.Reason,
			RequestedBy: fmt.Sprintf("ripcord's recovery of %s run %d", ep.Repository, ep.RunID)},
		Repository: ep.Repository, Cluster: ep.Cluster, Window: ep.Context.Config.Window,
		Env:            repoconfig.Environment{Name: ep.Environment, Cluster: ep.Cluster, Rollback: ep.Context.Config.Rollback},
		ConfigRevision: ep.HeadSHA, PublicURL: x.st.deps.Config.PublicURL,
	}
}

// Ask asks GitHub, before the decision's transaction, about the rollbacks
// of the environment whose records say their pull requests are open, as a
// person's request does (begin): the same rollback's pull request closed
// meanwhile is withdrawn now, so that Queue decides the next attempt
// rather than follow a pull request that will never be merged (attempt);
// another one merged though ripcord missed the merge is not in the way,
// and one closed meanwhile is withdrawn now (inFlight). The answer is the
// merged ones, for Queue's claim; a merge and a withdrawal stay true
// however late Queue runs.
func (x executor) Ask(ctx context.Context, req recoveryflow.RollbackRequest) (any, error) {
	plan, in, err := x.st.decide(ctx, x.input(req))
	if err == nil {
		plan, _, err = x.st.attempt(ctx, in, plan, true)
	}
	var refused *Refused
	if errors.As(err, &refused) {
		return nil, nil // Queue decides the same, and says why
	}
	if err != nil {
		return nil, err
	}
	_, merged, err := x.st.asked(ctx, plan)
	return merged, err
}

// Queue decides from the episode inside the decision's transaction. A
// rollback that cannot be opened is a recoveryflow.NotStarted, which ends
// the episode in rollback_failed, rather than an error failing the
// decision's transaction, which would only be retried to the same end.
func (x executor) Queue(ctx context.Context, tx *sql.Tx, req recoveryflow.RollbackRequest) (string, error) {
	plan, in, err := x.st.decide(ctx, x.input(req))
	if err == nil {
		// Past attempts whose pull requests were closed unmerged; GitHub
		// is not asked inside the decision's transaction (Ask did, and
		// withdrew one closed while ripcord missed the event).
		plan, _, err = x.st.attempt(ctx, in, plan, false)
	}
	if err == nil {
		// One rollback pull request at a time per environment, as for a
		// person: another rollback's open (or being opened) is named in the
		// episode's alert, and no second one is opened beside it. The
		// same rollback, open already, is followed instead. Those GitHub
		// said were merged (Ask) are not in the way.
		merged, _ := req.Asked.([]string)
		err = x.st.claim(ctx, tx, plan, merged)
	}
	var refused *Refused
	if errors.As(err, &refused) {
		return "", &recoveryflow.NotStarted{Reason: "the rollback pull request was not opened: " + refused.Reason}
	}
	if err != nil {
		return "", err
	}
	// The rollback release's record ends the episode when it settles.
	_, err = x.st.queue(ctx, tx, argsFor(plan, nil))
	return plan.Record.ReleaseID, err
}
