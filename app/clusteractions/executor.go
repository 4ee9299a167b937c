package clusteractions

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
	"github.com/ripcord/ripcord/rollbackpr"
)

// KubernetesExecutor carries out rollbacks decided for rollback mode
// kubernetes: in the decision's transaction it opens the rollback release
// and queues the action for the cluster's agent. The agent puts the
// rollback's release id on the Deployment, so the facts that follow join the
// rollback release and, once it is healthy, the failed one becomes
// rolled-back.
func KubernetesExecutor(d pipeline.Deps) recoveryflow.RollbackExecutor { return k8sExecutor{d: d} }

type k8sExecutor struct{ d pipeline.Deps }

func (k8sExecutor) Mode() string { return repoconfig.ModeKubernetes }

func (x k8sExecutor) Queue(ctx context.Context, tx *sql.Tx, req recoveryflow.RollbackRequest) (string, error) {
	ep, rb := req.Episode, req.Episode.Context.Config.Rollback
	if ep.ReleaseID == "" {
		return "", fmt.Errorf("kubernetes rollback of %s/%s: the failed release is unknown", ep.App, ep.Environment)
	}
	// The agent builds the image from the running one and a tag; a target
	// pinned by digest only has none, and the agent must never pick one.
	if req.Target.Version == "" {
		return "", &recoveryflow.NotStarted{Reason: fmt.Sprintf(
			"the kubernetes rollback of %s to release %s was not started: its image is pinned by digest only (%s), so there is no tag to set on the Deployment; roll back by hand",
			where(ep), req.Target.ReleaseID, req.Target.Digest)}
	}
	releaseID := RollbackReleaseID(req.Key, ep.Cluster, ep.Environment)
	action := Action{Cluster: ep.Cluster, Kind: actionapi.KindRollback,
		Namespace: or(rb.Namespace, ep.App), Deployment: or(rb.Deployment, ep.App), Container: rb.Container,
		TargetVersion: req.Target.Version, FailedVersion: ep.Context.Input.FailedVersion,
		ReleaseID: releaseID, RollbackOf: ep.ReleaseID, Reason: req.Reason, Key: req.Key}
	// An action the agent could not be handed is a rollback that cannot
	// start, said once; as an error it would fail the decision's
	// transaction again at every retry.
	if err := action.Validate(); err != nil {
		return "", &recoveryflow.NotStarted{Reason: fmt.Sprintf("the kubernetes rollback of %s was not started: %v", where(ep), err)}
	}
	rec := records.Record{ReleaseID: releaseID, App: ep.App,
		Environment: ep.Environment, Cluster: ep.Cluster, Repository: ep.Repository, Kind: records.KindRollback,
		RollbackOf: ep.ReleaseID, RollbackReason: req.Reason, Image: req.Target.Version}
	target, err := x.d.Records.Get(ctx, req.Target.ReleaseID)
	switch {
	case err == nil:
		rec.Image, rec.GitRevision = target.Image, target.GitRevision
		rec.Digest = target.ResolvedDigest()
	case !errors.Is(err, records.ErrNotFound):
		return "", err
	}
	opened, events, err := x.d.Records.OpenRelease(ctx, tx, rec, x.d.Now())
	if err != nil {
		return "", fmt.Errorf("open kubernetes rollback release %s: %w", rec.ReleaseID, err)
	}
	if len(events) > 0 {
		if err := deployments.Queue(ctx, tx, x.d.River(), x.d.Log, []records.Record{opened}); err != nil {
			return "", err
		}
		// A rollout in waves of the failed release stops (rolloutflow.StartArgs).
		if err := rolloutflow.QueueStart(ctx, tx, x.d.River(), rolloutflow.StartArgs{ReleaseID: opened.ReleaseID}); err != nil {
			return "", err
		}
	}
	_, err = Enqueue(ctx, tx, action)
	// The rollback release's facts end the episode (recoveryflow.QueueRollbackOutcomes).
	return rec.ReleaseID, err
}

// RollbackReleaseID is the rollback release's id: derived from the decision's
// idempotency key, so a retried decision opens the same release, and
// shortened to records.MaxIDLen (rollbackpr.Shorten) when the cluster and
// environment are long, so that the facts that echo it fit the cap.
func RollbackReleaseID(key, cluster, env string) string {
	sum := sha256.Sum256([]byte(key))
	return rollbackpr.Shorten(fmt.Sprintf("rollback-%s:%s/%s", hex.EncodeToString(sum[:])[:12], cluster, env), records.MaxIDLen)
}

func where(ep recoveryflow.Episode) string {
	return fmt.Sprintf("%s in %s/%s", ep.App, ep.Cluster, ep.Environment)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
