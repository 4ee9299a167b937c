package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/k8stest"
)

// Rollbacks against a real kube-apiserver, controller manager and kwok,
// one control plane for every case (it is slow to start).
func TestRollbackOnARealControlPlane(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace("shop")
	port := k8stest.ServePods(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"healthy"}`))
	}))
	for name, run := range map[string]func(*testing.T, *k8stest.Cluster, int){
		"a crash-looping pod of the patched revision fails the rollout at once":      crashLoopingRollback,
		"a person's change between the read and the patch is not overwritten":        changedBeforeThePatch,
		"a patch RBAC forbids fails as a Kubernetes API error, changing nothing":     forbiddenPatch,
		"a Deployment scaled to 0 is verified by its patched template observed":      scaledToZeroRollback,
		"the failed revision's exceeded deadline is no fact of the rollback":         staleDeadlineFacts,
		"an agent started after the rollback ignores the failed revision's deadline": staleDeadlineAfterRestart,
	} {
		t.Run(name, func(t *testing.T) { run(t, k, port) })
	}
}

// realDeployment runs version v2 of name with one replica; its new pods
// become available minReady after they are ready.
func realDeployment(t *testing.T, k *k8stest.Cluster, name string, minReady int32, strategy appsv1.DeploymentStrategy) *appsv1.Deployment {
	t.Helper()
	one := int32(1)
	pods := map[string]string{"app": name}
	d := createDeployment(t, k, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{cluster.VersionLabel: "v2"}},
		Spec: appsv1.DeploymentSpec{Replicas: &one, MinReadySeconds: minReady, Strategy: strategy,
			Selector: &metav1.LabelSelector{MatchLabels: pods},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pods},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry:5000/team/" + name + ":v2"}}}}},
	})
	waitWithin(t, time.Minute, name+" to roll out", func() bool {
		cur, err := k.Kube.AppsV1().Deployments("shop").Get(t.Context(), name, metav1.GetOptions{})
		return err == nil && cur.Status.ObservedGeneration == cur.Generation && cur.Status.AvailableReplicas == 1 && cur.Status.Replicas == 1
	})
	return d
}

func realRollbacker(k *k8stest.Cluster, port int) *cluster.Rollbacker {
	h := cluster.DefaultHealth()
	h.Port, h.Interval, h.Timeout, h.RequestTimeout = port, 250*time.Millisecond, 20*time.Second, 2*time.Second
	return &cluster.Rollbacker{Kube: k.Kube, Health: h, RolloutTimeout: 40 * time.Second, RolloutPoll: 250 * time.Millisecond}
}

// realAction rolls name back from v2 to v1.
func realAction(name string) actionapi.Action {
	return actionapi.Action{ID: "act_" + name, Cluster: "prod-eu", Kind: actionapi.KindRollback, Namespace: "shop",
		Deployment: name, TargetVersion: "v1", FailedVersion: "v2", ReleaseID: "rb-" + name, RollbackOf: name + "-2"}
}

// crashLoop makes every pod of name running image crash-loop, as a kubelet
// reports a container that keeps exiting, until ctx ends.
func crashLoop(ctx context.Context, t *testing.T, k *k8stest.Cluster, name, image string) {
	pods := k.Kube.CoreV1().Pods("shop")
	for ctx.Err() == nil {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err == nil {
			for _, p := range list.Items {
				if p.Spec.Containers[0].Image != image || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil ||
					(len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Waiting != nil) {
					continue
				}
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse},
					{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: name, Image: image, RestartCount: 4,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
						Message: "back-off 40s restarting failed container"}}}}
				if _, err := pods.UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
					t.Logf("mark %s crash-looping: %v", p.Name, err)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The new pod turns Ready, then its container keeps crashing. The old code
// took the rollout for complete (updated, and no old pod with
// maxUnavailable 1) while the pod was not available, and the health check
// then waited out its whole timeout on a revision that could never pass.
func crashLoopingRollback(t *testing.T, k *k8stest.Cluster, port int) {
	unavailable := intstr.FromInt32(1)
	surge := intstr.FromInt32(0)
	realDeployment(t, k, "crashy", 5, appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &unavailable, MaxSurge: &surge}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go crashLoop(ctx, t, k, "crashy", "registry:5000/team/crashy:v1")
	start := time.Now()
	res := realRollbacker(k, port).Rollback(t.Context(), realAction("crashy"))
	if res.Outcome != actionapi.OutcomeRollbackFailed || res.ErrorType != cluster.ErrTypeRolloutFailed || !strings.Contains(res.Reason, "CrashLoopBackOff") {
		t.Errorf("after %s: %s %s: %s; want rollout_failed naming the crash loop", time.Since(start).Round(time.Millisecond),
			res.Outcome, res.ErrorType, res.Reason)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the crash loop was reported after %s; want it before any timeout", took.Round(time.Second))
	}
}

// beforePatch runs change once, just before the first PATCH the client
// sends reaches the API server.
type beforePatch struct {
	next   http.RoundTripper
	change func()
	done   bool
}

func (b *beforePatch) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch && !b.done {
		b.done = true
		b.change()
	}
	return b.next.RoundTrip(r)
}

// Someone deploys v3 after the agent read the Deployment (running the
// failed v2) and before its patch lands: the patch is conditional on the
// version read, so the agent reads again, finds v3 running and skips,
// rather than put v1 over the person's deploy.
func changedBeforeThePatch(t *testing.T, k *k8stest.Cluster, port int) {
	realDeployment(t, k, "raced", 0, appsv1.DeploymentStrategy{})
	cfg := rest.CopyConfig(k.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &beforePatch{next: rt, change: func() {
			d, err := k.Kube.AppsV1().Deployments("shop").Get(t.Context(), "raced", metav1.GetOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			d.Spec.Template.Spec.Containers[0].Image = "registry:5000/team/raced:v3"
			if _, err := k.Kube.AppsV1().Deployments("shop").Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
		}}
	})
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := realRollbacker(k, port)
	r.Kube = kube
	res := r.Rollback(t.Context(), realAction("raced"))
	d, err := k.Kube.AppsV1().Deployments("shop").Get(t.Context(), "raced", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry:5000/team/raced:v3" || d.Annotations[cluster.ActionAnnotation] != "" {
		t.Errorf("the Deployment runs %s (action annotation %q); want the person's v3 left alone", img, d.Annotations[cluster.ActionAnnotation])
	}
	if res.Outcome != actionapi.OutcomeSkipped || res.RunningVersion != "v3" {
		t.Errorf("result %s %s: %s; want skipped, v3 running", res.Outcome, res.ErrorType, res.Reason)
	}
}

// An agent whose Role may read Deployments and pods but not patch them.
func forbiddenPatch(t *testing.T, k *k8stest.Cluster, port int) {
	before := realDeployment(t, k, "guarded", 0, appsv1.DeploymentStrategy{})
	kube, _ := agentClients(t, k, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-only-agent", Namespace: "shop"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}})
	r := realRollbacker(k, port)
	r.Kube = kube
	res := r.Rollback(t.Context(), realAction("guarded"))
	if res.Outcome != actionapi.OutcomeRollbackFailed || res.ErrorType != cluster.ErrTypeKubernetesAPI || !strings.Contains(res.Reason, "forbidden") {
		t.Errorf("result %s %s: %s; want rollback_failed, kubernetes_api, saying the patch is forbidden", res.Outcome, res.ErrorType, res.Reason)
	}
	after, err := k.Kube.AppsV1().Deployments("shop").Get(t.Context(), "guarded", metav1.GetOptions{})
	if err != nil || after.Generation != before.Generation {
		t.Errorf("the Deployment changed (generation %d -> %d, %v)", before.Generation, after.Generation, err)
	}
}

// A Deployment someone scaled to 0 (a paused service, a standby region)
// runs the failed version in its template. Its rollback has no pod to ask
// for health: the old check waited for a healthy pod that could never
// come and failed the rollback; it is verified by the controller having
// observed the patched template with no replica left.
func scaledToZeroRollback(t *testing.T, k *k8stest.Cluster, port int) {
	zero := int32(0)
	pods := map[string]string{"app": "standby"}
	createDeployment(t, k, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "standby", Namespace: "shop", Labels: map[string]string{cluster.VersionLabel: "v2"}},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: pods},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pods},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "standby", Image: "registry:5000/team/standby:v2"}}}}},
	})
	waitWithin(t, time.Minute, "standby to be observed", func() bool {
		cur, err := k.Kube.AppsV1().Deployments("shop").Get(t.Context(), "standby", metav1.GetOptions{})
		return err == nil && cur.Status.ObservedGeneration == cur.Generation
	})
	res := realRollbacker(k, port).Rollback(t.Context(), realAction("standby"))
	if res.Status != actionapi.StatusDone || res.Outcome != actionapi.OutcomeRolledBack {
		t.Fatalf("result %s %s: %s; want rolled_back", res.Outcome, res.ErrorType, res.Reason)
	}
	d, err := k.Kube.AppsV1().Deployments("shop").Get(t.Context(), "standby", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry:5000/team/standby:v1" || d.Status.ObservedGeneration != d.Generation ||
		d.Status.Replicas != 0 || d.Status.UpdatedReplicas != 0 {
		t.Errorf("after the rollback: image %s, observed generation %d of %d, %d replicas (%d updated); want v1 observed at 0",
			img, d.Status.ObservedGeneration, d.Generation, d.Status.Replicas, d.Status.UpdatedReplicas)
	}
	var passed string
	for _, e := range res.Audit {
		if e.Type == "health_check_passed" {
			passed = e.Message
		}
	}
	if !strings.Contains(passed, "scaled to 0") || !strings.Contains(passed, fmt.Sprintf("generation %d", d.Generation)) {
		t.Errorf("health_check_passed %q; want it to say the 0 replicas of generation %d were observed", passed, d.Generation)
	}
}
