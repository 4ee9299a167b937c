package cluster

import (
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/records"
)

// ActionAnnotation records on the Deployment which action patched it, in
// the same PATCH as the image: after a restart the agent reads it to know
// whether its patch landed, so it never patches twice.
const ActionAnnotation = "ripcord.dev/action-id"

// Error types of a rollback that did not complete (Result.ErrorType).
const (
	ErrTypeDeploymentNotFound = "deployment_not_found"
	ErrTypeKubernetesAPI      = "kubernetes_api"
	ErrTypeContainer          = "container_not_found"
	ErrTypeLiveUnreadable     = "live_version_unreadable"
	ErrTypePinnedByDigest     = "pinned_by_digest"
	ErrTypeNoPreviousVersion  = "no_previous_version"
	ErrTypeInvalidTarget      = "invalid_target"
	ErrTypePatchNotApplied    = "patch_not_applied"
	ErrTypeChangedSincePatch  = "changed_since_patch"
	ErrTypeRolloutFailed      = "rollout_failed"
	ErrTypeRolloutTimeout     = "rollout_timeout"
	ErrTypeHealthCheckFailed  = "health_check_failed"
	ErrTypeUnsupported        = "unsupported_action"
	ErrTypeJournal            = "journal_unwritable"
	// ErrTypeAgentStopped: the agent was stopped (SIGTERM) after it
	// claimed the action and before it touched the Deployment; nothing
	// was changed. The agent gives the action back (not_started, see
	// actionRunner.giveBack); only a server that does not know that
	// status is told rollback_failed.
	ErrTypeAgentStopped = "agent_stopped"
)

// verdict ends a rollback: why, and the audit event that says so.
type verdict struct {
	Outcome   string
	ErrorType string
	Reason    string
	Audit     records.AuditType
	// Running is the version found running, when one was read.
	Running string
}

func (v *verdict) Error() string { return v.Reason }

func failed(errType, format string, args ...any) *verdict {
	return &verdict{Outcome: actionapi.OutcomeRollbackFailed, ErrorType: errType,
		Reason: fmt.Sprintf(format, args...), Audit: records.AuditRollbackFailed}
}

func alert(errType, format string, args ...any) *verdict {
	return &verdict{Outcome: actionapi.OutcomeAlert, ErrorType: errType,
		Reason: fmt.Sprintf(format, args...), Audit: records.AuditManualInterventionRequired}
}

// rollbackPlan is what a rollback will change.
type rollbackPlan struct {
	Container      string
	RunningImage   string
	RunningVersion string
	TargetVersion  string
	TargetImage    string
	Patch          []byte
	// Generation is the Deployment's generation after the patch: the
	// revision the rollout wait looks for.
	Generation int64
	// StaleDeadline is when the progress deadline of the revision that
	// failed was exceeded, if the Deployment still said so right after the
	// patch: the controller keeps that condition until the rollback makes
	// progress, also in the first status of the patched generation, so it
	// says nothing about the rollback.
	StaleDeadline *metav1.Time
}

// deadlineExceeded is the Progressing condition of a Deployment that
// exceeded its progress deadline; nil when it did not.
func deadlineExceeded(d *appsv1.Deployment) *appsv1.DeploymentCondition {
	for i, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// planRollback decides, from the live Deployment, what to patch — or why
// nothing is: no application container (failed), a live version that
// cannot be read or is pinned by digest (alert), another version running
// (skip), no target named by the server (alert: eligibility comes from the
// server's records, and the agent never rolls back to a version it chose
// itself, such as an older ReplicaSet's).
func planRollback(a actionapi.Action, d *appsv1.Deployment) (rollbackPlan, *verdict) {
	cs := d.Spec.Template.Spec.Containers
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	i, err := AppContainer(d.Name, a.Container, names)
	if err != nil {
		return rollbackPlan{}, failed(ErrTypeContainer, "%v", err)
	}
	p := rollbackPlan{Container: cs[i].Name, RunningImage: cs[i].Image}
	p.RunningVersion, err = LiveVersion(p.RunningImage)
	switch {
	case errors.Is(err, ErrPinnedByDigest):
		return p, alert(ErrTypePinnedByDigest, "cannot tell which version runs: %v", err)
	case err != nil:
		return p, alert(ErrTypeLiveUnreadable, "cannot read the live version of container %s: %v", p.Container, err)
	case p.RunningVersion != a.FailedVersion:
		return p, &verdict{Outcome: actionapi.OutcomeSkipped, Audit: records.AuditRollbackSkipped, Running: p.RunningVersion,
			Reason: fmt.Sprintf("%s/%s runs %s, not the failed version %s: nothing to roll back", d.Namespace, d.Name, p.RunningVersion, a.FailedVersion)}
	case a.TargetVersion == "":
		return p, alert(ErrTypeNoPreviousVersion, "the server named no version to roll back to; the agent does not choose one itself")
	}
	p.TargetVersion = a.TargetVersion
	if p.TargetImage, err = TargetImage(p.RunningImage, p.TargetVersion); err != nil {
		return p, failed(ErrTypeInvalidTarget, "%v", err)
	}
	if p.Patch, err = rollbackPatch(d, p.Container, p.TargetImage, p.TargetVersion, a); err != nil {
		return p, failed(ErrTypeInvalidTarget, "%v", err)
	}
	return p, nil
}

// rollbackPatch is the strategic merge patch of a rollback: the one
// container's image (containers merge by name, so the others are left
// alone), the version labels of the Deployment and its pod template, the
// release id and the action id. The resourceVersion makes it conditional:
// if the Deployment changed since it was read, the API server answers 409
// and the rollback reads it again, so the live-version check and the patch
// see the same object.
func rollbackPatch(d *appsv1.Deployment, container, image, version string, a actionapi.Action) ([]byte, error) {
	selector := map[string]bool{}
	if d.Spec.Selector != nil {
		for k := range d.Spec.Selector.MatchLabels {
			selector[k] = true
		}
		for _, e := range d.Spec.Selector.MatchExpressions {
			selector[e.Key] = true
		}
	}
	// A template label that the selector uses cannot change (the selector
	// is immutable and must match the template), so it is left as it is;
	// the Deployment's own labels have no such tie.
	versionLabels := func(have map[string]string, fixed map[string]bool) map[string]string {
		out := map[string]string{}
		if len(validation.IsValidLabelValue(version)) > 0 {
			return out
		}
		for _, k := range []string{VersionLabel, ShortVersionLabel} {
			_, present := have[k]
			if (k == VersionLabel || present) && !fixed[k] {
				out[k] = version
			}
		}
		return out
	}
	annotations := map[string]string{ActionAnnotation: a.ID}
	if a.ReleaseID != "" {
		annotations[ReleaseIDAnnotation] = a.ReleaseID
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": d.ResourceVersion,
			"labels":          versionLabels(d.Labels, nil),
			"annotations":     annotations,
		},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": versionLabels(d.Spec.Template.Labels, selector)},
			"spec":     map[string]any{"containers": []map[string]any{{"name": container, "image": image}}},
		}},
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encode the rollback patch: %w", err)
	}
	return body, nil
}

// rolloutState says whether the patched revision has rolled out: the
// controller observed generation, every replica is updated and available
// and no old replica is left; failed says why it never will (the progress deadline,
// or a paused Deployment, which takes the patch but rolls nothing out
// until someone resumes it: ripcord does not resume what a person paused).
func rolloutState(d *appsv1.Deployment, generation int64, stale *metav1.Time) (done bool, failed string) {
	if d.Status.ObservedGeneration < generation {
		return false, ""
	}
	if c := deadlineExceeded(d); c != nil && (stale == nil || !c.LastUpdateTime.Equal(stale)) {
		return false, fmt.Sprintf("the Deployment exceeded its progress deadline (%d of %d replicas updated)",
			d.Status.UpdatedReplicas, replicasOf(d.Spec.Replicas))
	}
	desired := replicasOf(d.Spec.Replicas)
	done = d.Status.UpdatedReplicas == desired && d.Status.Replicas == desired && d.Status.AvailableReplicas == desired
	if !done && d.Spec.Paused {
		return false, fmt.Sprintf("the Deployment is paused (spec.paused), so the patched revision does not roll out (%d of %d replicas updated); "+
			"it rolls out once resumed: kubectl rollout resume deployment/%s -n %s", d.Status.UpdatedReplicas, desired, d.Name, d.Namespace)
	}
	return done, ""
}
