package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/records"
)

// Rollback defaults.
const (
	DefaultRolloutTimeout = 300 * time.Second
	defaultRolloutPoll    = 2 * time.Second
	// MaxActionHealthTimeout caps the health timeout an action asks for
	// (Health.Timeout): six times seed 000's 300 s default. The server
	// fails a claim that has had no result for an hour
	// (clusteractions.ClaimTimeout); an action's rollout wait (300 s by
	// default) and health check must end well before that, or the agent
	// is held in one action while the server has given up on it.
	MaxActionHealthTimeout = 30 * time.Minute
)

// Rollbacker rolls a Deployment back as seed 000 describes: find the
// application container, read the live tag (skip when another version runs,
// alert when it cannot be read or is pinned by digest), patch that
// container's image and the version labels, check the Deployment reports
// the target image, wait for the rollout, then verify health.
type Rollbacker struct {
	Kube kubernetes.Interface
	// HTTP is the client of the health check's requests to pods; nil:
	// PodClient.
	HTTP   *http.Client
	Health HealthConfig
	// RolloutTimeout bounds the wait for the new revision; RolloutPoll is
	// the pause between two reads of its status.
	RolloutTimeout time.Duration
	RolloutPoll    time.Duration
	Now            func() time.Time
}

// Rollback carries out a rollback action and says how it ended; every error
// on the way is part of the result (rollback_failed with its type). When
// the Deployment already carries this action's id, an earlier run of the
// agent patched it before it stopped: the patch is not repeated, the
// rollout and health are verified.
func (r *Rollbacker) Rollback(ctx context.Context, a actionapi.Action) actionapi.Result {
	res, _ := r.rollback(ctx, a, false)
	return res
}

// rollback is Rollback that also says whether the Deployment may carry
// this action's patch (touched): a patch was sent, or a read found it, or
// earlierRun (an earlier run of the agent started this action) and no
// read since has shown the Deployment without it. An action cut short by
// the agent stopping that has not touched the Deployment can be reported
// as not done; one that has must be verified by the next start.
func (r *Rollbacker) rollback(ctx context.Context, a actionapi.Action, earlierRun bool) (res actionapi.Result, touched bool) {
	rec := &recorder{now: r.now}
	touched = earlierRun
	plan, resumed, v := r.patch(ctx, a, &touched)
	if v != nil {
		return rec.end(v, plan), touched
	}
	if resumed {
		rec.add(records.AuditRollbackInitiated, map[string]any{"target_image": plan.TargetImage, "resumed": true},
			"resuming the rollback of %s/%s to %s: this action's patch was applied before the agent restarted; it is not repeated",
			a.Namespace, a.Deployment, plan.TargetImage)
	} else {
		rec.add(records.AuditRollbackInitiated, map[string]any{"running_version": plan.RunningVersion,
			"target_version": plan.TargetVersion, "target_image": plan.TargetImage, "container": plan.Container},
			"rolling back %s/%s container %s from %s (running) to %s", a.Namespace, a.Deployment, plan.Container,
			plan.RunningVersion, plan.TargetVersion)
	}
	if v := r.waitRollout(ctx, a, plan); v != nil {
		return rec.end(v, plan), touched
	}
	cfg := r.Health
	if a.Health != nil {
		cfg = overrideHealth(cfg, *a.Health)
	}
	if asked, capped := capHealthTimeout(&cfg, a.Health); capped {
		rec.add(records.AuditHealthCheckStarted, map[string]any{"timeout": cfg.Timeout.String(), "requested_timeout": asked.String()},
			"checking the health of %s/%s for at most %s: the action asked for %s, more than the agent allows one action's health check",
			a.Namespace, a.Deployment, cfg.Timeout, asked)
	} else {
		rec.add(records.AuditHealthCheckStarted, nil, "checking the health of %s/%s", a.Namespace, a.Deployment)
	}
	rep := CheckHealth(ctx, r.Kube, r.httpClient(), a.Namespace, a.Deployment, cfg)
	data := map[string]any{"healthy_pods": rep.Healthy, "probed_pods": rep.Probed}
	if !rep.Passed {
		rec.add(records.AuditHealthCheckFailed, data, "%s", rep.Reason)
		errType := ErrTypeHealthCheckFailed
		switch {
		case rep.APIError && apierrors.IsNotFound(rep.Err):
			errType = ErrTypeDeploymentNotFound
		case rep.APIError:
			errType = ErrTypeKubernetesAPI
		}
		return rec.end(failed(errType, "health check of %s/%s: %s", a.Namespace, a.Deployment, rep.Reason), plan), touched
	}
	rec.add(records.AuditHealthCheckPassed, data, "%s", rep.Reason)
	rec.add(records.AuditRollbackCompleted, map[string]any{"target_image": plan.TargetImage},
		"%s/%s rolled back to %s and healthy", a.Namespace, a.Deployment, plan.TargetVersion)
	return rec.result(actionapi.StatusDone, actionapi.OutcomeRolledBack, plan), touched
}

// patch reads the Deployment, plans the rollback and applies it, reading
// again when the Deployment changed in between (409). It keeps touched
// up to date (see rollback): a patch the API server refused with 409 was
// not applied, one cut short may have been. When ctx ends before the
// Deployment was touched, the verdict is ErrTypeAgentStopped.
func (r *Rollbacker) patch(ctx context.Context, a actionapi.Action, touched *bool) (plan rollbackPlan, resumed bool, v *verdict) {
	deployments := r.Kube.AppsV1().Deployments(a.Namespace)
	var last error
	attempt := func() error {
		d, err := deployments.Get(ctx, a.Deployment, metav1.GetOptions{})
		if err != nil {
			return err
		}
		*touched = d.Annotations[ActionAnnotation] == a.ID
		if *touched {
			plan, resumed = patchedPlan(a, d), true
			if a.TargetVersion != "" && plan.TargetVersion != a.TargetVersion {
				return failed(ErrTypeChangedSincePatch, "%s/%s was patched by this action, then changed to %q before the agent restarted; not verified as a rollback",
					a.Namespace, a.Deployment, plan.TargetImage)
			}
			return nil
		}
		p, v := planRollback(a, d)
		plan = p
		if v != nil {
			return v
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		*touched = true
		_, err = deployments.Patch(ctx, a.Deployment, types.StrategicMergePatchType, p.Patch, metav1.PatchOptions{})
		return err
	}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error { last = attempt(); return last })
	if err == nil {
		// RetryOnConflict takes an error that wraps context.Canceled
		// for an interruption of its own backoff and returns nil.
		err = last
	}
	if errors.As(err, &v) {
		return plan, false, v
	}
	if err != nil && ctx.Err() != nil && !*touched {
		return plan, false, failed(ErrTypeAgentStopped, "the agent stopped before it patched %s/%s: nothing was changed; the rollback was not carried out",
			a.Namespace, a.Deployment)
	}
	if err != nil {
		return plan, false, apiFailure(err, a)
	}
	// Seed 000, step 4: the Deployment must report the target image.
	d, err := deployments.Get(ctx, a.Deployment, metav1.GetOptions{})
	if err != nil {
		return plan, resumed, apiFailure(err, a)
	}
	if img := containerImage(d, plan.Container); img != plan.TargetImage {
		return plan, resumed, failed(ErrTypePatchNotApplied, "after the patch %s/%s container %s reports image %q, not %q",
			a.Namespace, a.Deployment, plan.Container, img, plan.TargetImage)
	}
	plan.Generation = d.Generation
	if c := deadlineExceeded(d); c != nil {
		plan.StaleDeadline = c.LastUpdateTime.DeepCopy()
	}
	return plan, resumed, nil
}

// patchedPlan describes a patch an earlier run applied, from what the
// Deployment runs now.
func patchedPlan(a actionapi.Action, d *appsv1.Deployment) rollbackPlan {
	names := make([]string, 0, len(d.Spec.Template.Spec.Containers))
	for _, c := range d.Spec.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	var p rollbackPlan
	if i, err := AppContainer(d.Name, a.Container, names); err == nil {
		p.Container = d.Spec.Template.Spec.Containers[i].Name
		p.TargetImage = d.Spec.Template.Spec.Containers[i].Image
		p.TargetVersion, _ = LiveVersion(p.TargetImage)
	}
	return p
}

func containerImage(d *appsv1.Deployment, name string) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

func apiFailure(err error, a actionapi.Action) *verdict {
	if apierrors.IsNotFound(err) {
		return failed(ErrTypeDeploymentNotFound, "Deployment %s/%s not found: %v", a.Namespace, a.Deployment, err)
	}
	return failed(ErrTypeKubernetesAPI, "Kubernetes API: %v", err)
}

// waitRollout waits until the patched revision has rolled out.
func (r *Rollbacker) waitRollout(ctx context.Context, a actionapi.Action, plan rollbackPlan) *verdict {
	timeout := r.RolloutTimeout
	if timeout <= 0 {
		timeout = DefaultRolloutTimeout
	}
	poll := r.RolloutPoll
	if poll <= 0 {
		poll = defaultRolloutPoll
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	generation := plan.Generation
	last := "not read yet"
	for {
		d, err := r.Kube.AppsV1().Deployments(a.Namespace).Get(ctx, a.Deployment, metav1.GetOptions{})
		switch {
		case err != nil && ctx.Err() != nil:
			return failed(ErrTypeRolloutTimeout, "the rollout of %s/%s did not finish within %s: %s", a.Namespace, a.Deployment, timeout, last)
		case err != nil:
			return apiFailure(err, a)
		}
		done, why := rolloutState(d, generation, plan.StaleDeadline)
		if why == "" && d.Status.ObservedGeneration >= generation {
			if why, err = r.crashLooping(ctx, d, plan); err != nil && ctx.Err() == nil {
				return apiFailure(err, a)
			}
		}
		if why != "" {
			return failed(ErrTypeRolloutFailed, "the rollout of %s/%s to %s failed: %s", a.Namespace, a.Deployment, plan.TargetImage, why)
		}
		if done {
			return nil
		}
		last = fmt.Sprintf("observed generation %d of %d, %d updated, %d available, %d replicas, %d desired", d.Status.ObservedGeneration,
			generation, d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.Replicas, replicasOf(d.Spec.Replicas))
		select {
		case <-ctx.Done():
			return failed(ErrTypeRolloutTimeout, "the rollout of %s/%s did not finish within %s: %s", a.Namespace, a.Deployment, timeout, last)
		case <-time.After(poll):
		}
	}
}

// crashLooping names a pod of the patched revision (its application
// container runs the target image) with a container in CrashLoopBackOff:
// such a revision never becomes available, and waiting out the timeouts
// would only hide why. "" when there is none.
func (r *Rollbacker) crashLooping(ctx context.Context, d *appsv1.Deployment, plan rollbackPlan) (string, error) {
	pods, err := r.Kube.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || !runsImage(p.Spec.Containers, plan.Container, plan.TargetImage) {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				return fmt.Sprintf("pod %s of the patched revision is crash-looping: container %s is in CrashLoopBackOff after %d restarts",
					p.Name, c.Name, c.RestartCount), nil
			}
		}
	}
	return "", nil
}

func runsImage(cs []corev1.Container, name, image string) bool {
	for _, c := range cs {
		if c.Name == name {
			return c.Image == image
		}
	}
	return false
}

func (r *Rollbacker) httpClient() *http.Client {
	if r.HTTP != nil {
		return r.HTTP
	}
	return PodClient()
}

func (r *Rollbacker) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

// overrideHealth applies an action's health settings over the agent's.
func overrideHealth(c HealthConfig, h actionapi.Health) HealthConfig {
	if h.Port != 0 {
		c.Port = h.Port
	}
	if h.Path != "" {
		c.Path = h.Path
	}
	if h.MinHealthy != 0 {
		c.MinHealthy = h.MinHealthy
	}
	if d, err := time.ParseDuration(h.RequestTimeout); err == nil && d > 0 {
		c.RequestTimeout = d
	}
	if d, err := time.ParseDuration(h.Timeout); err == nil && d > 0 {
		c.Timeout = d
	}
	return c
}

// capHealthTimeout bounds the health timeout an action asked for to
// MaxActionHealthTimeout and says what it asked when it was cut. The
// agent's own --health-timeout is its operator's choice and is not capped.
func capHealthTimeout(c *HealthConfig, h *actionapi.Health) (asked time.Duration, capped bool) {
	if h == nil {
		return 0, false
	}
	d, err := time.ParseDuration(h.Timeout)
	if err != nil || d <= MaxActionHealthTimeout {
		return 0, false
	}
	c.Timeout = MaxActionHealthTimeout
	return d, true
}

// recorder collects the audit events of one action.
type recorder struct {
	now    func() time.Time
	events []actionapi.AuditEvent
}

func (r *recorder) add(t records.AuditType, data map[string]any, format string, args ...any) {
	r.events = append(r.events, actionapi.AuditEvent{Type: string(t), At: r.now(), Message: fmt.Sprintf(format, args...), Data: data})
}

// end closes a rollback that did not complete with the verdict's event.
func (r *recorder) end(v *verdict, p rollbackPlan) actionapi.Result {
	data := map[string]any{}
	if v.ErrorType != "" {
		data["error_type"] = v.ErrorType
	}
	if v.Running != "" {
		data["running_version"] = v.Running
	}
	r.add(v.Audit, data, "%s", v.Reason)
	res := r.result(actionapi.StatusFailed, v.Outcome, p)
	res.Reason, res.ErrorType = v.Reason, v.ErrorType
	if v.Running != "" {
		res.RunningVersion = v.Running
	}
	return res
}

func (r *recorder) result(status, outcome string, p rollbackPlan) actionapi.Result {
	return actionapi.Result{Status: status, Outcome: outcome, RunningVersion: p.RunningVersion,
		TargetVersion: p.TargetVersion, TargetImage: p.TargetImage, Audit: r.events}
}
