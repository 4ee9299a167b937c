package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/records"
)

func rollbackAction(mut ...func(*actionapi.Action)) actionapi.Action {
	a := actionapi.Action{ID: "act_1", Cluster: "prod-eu", Kind: actionapi.KindRollback, Namespace: "shop",
		Deployment: "checkout", TargetVersion: "v1", FailedVersion: "v2", ReleaseID: "rb1:prod-eu/prod",
		RollbackOf: "c2:prod-eu/prod", Reason: "deploy failed 4 times"}
	for _, m := range mut {
		m(&a)
	}
	return a
}

func withImage(img string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = img }
}

func replicaSet(name, version string, created time.Time, owner *appsv1.Deployment) appsv1.ReplicaSet {
	return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
		CreationTimestamp: metav1.NewTime(created), Labels: map[string]string{VersionLabel: version},
		OwnerReferences: []metav1.OwnerReference{{UID: owner.UID, Name: owner.Name, Kind: "Deployment"}}}}
}

func TestPlanRollback(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		action  actionapi.Action
		mut     func(*appsv1.Deployment)
		outcome string // "" = planned
		errType string
		target  string
	}{
		"the failed version runs: roll back": {action: rollbackAction(), target: "registry:5000/team/checkout:v1"},
		"another version runs: skip, nothing changed": {action: rollbackAction(),
			mut: withImage("registry:5000/team/checkout:v3"), outcome: actionapi.OutcomeSkipped},
		"someone already rolled back: skip": {action: rollbackAction(),
			mut: withImage("registry:5000/team/checkout:v1"), outcome: actionapi.OutcomeSkipped},
		"pinned by digest only: alert": {action: rollbackAction(),
			mut: withImage("registry:5000/team/checkout@sha256:" + hex64), outcome: actionapi.OutcomeAlert, errType: ErrTypePinnedByDigest},
		"no tag: alert": {action: rollbackAction(),
			mut: withImage("registry:5000/team/checkout"), outcome: actionapi.OutcomeAlert, errType: ErrTypeLiveUnreadable},
		"tag and digest: the digest is dropped": {action: rollbackAction(),
			mut: withImage("registry:5000/team/checkout:v2@sha256:" + hex64), target: "registry:5000/team/checkout:v1"},
		"two containers and none named like the Deployment: fail without a change": {action: rollbackAction(),
			mut:     func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "app" },
			outcome: actionapi.OutcomeRollbackFailed, errType: ErrTypeContainer},
	} {
		t.Run(name, func(t *testing.T) {
			d := deployment()
			if tc.mut != nil {
				tc.mut(d)
			}
			plan, v := planRollback(tc.action, d)
			if tc.outcome == "" {
				if v != nil {
					t.Fatalf("verdict %+v, want a plan", v)
				}
				if plan.TargetImage != tc.target {
					t.Errorf("target image %q, want %q", plan.TargetImage, tc.target)
				}
				return
			}
			if v == nil || v.Outcome != tc.outcome || v.ErrorType != tc.errType || len(plan.Patch) != 0 {
				t.Errorf("plan %+v, verdict %+v; want outcome %s (%s) and no patch", plan, v, tc.outcome, tc.errType)
			}
		})
	}
}

func TestRollbackPatchTouchesOnlyTheAppContainerAndTheVersionLabels(t *testing.T) {
	t.Parallel()
	d := deployment(func(d *appsv1.Deployment) {
		d.ResourceVersion = "41"
		d.Labels["version"] = "v2"
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "checkout", "version": "stable"}}
		d.Spec.Template.Labels = map[string]string{"app": "checkout", "version": "stable", VersionLabel: "v2"}
	})
	plan, v := planRollback(rollbackAction(), d)
	if v != nil {
		t.Fatal(v)
	}
	var p struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Labels          map[string]string `json:"labels"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Template struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
				Spec struct {
					Containers []map[string]any `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(plan.Patch, &p); err != nil {
		t.Fatal(err)
	}
	cs := p.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0]["name"] != "checkout" || cs[0]["image"] != "registry:5000/team/checkout:v1" || len(cs[0]) != 2 {
		t.Errorf("containers patch %v; want only checkout's image", cs)
	}
	if p.Metadata.ResourceVersion != "41" {
		t.Errorf("patch is not conditional on the version read: resourceVersion %q", p.Metadata.ResourceVersion)
	}
	if p.Metadata.Labels[VersionLabel] != "v1" || p.Metadata.Labels["version"] != "v1" {
		t.Errorf("Deployment labels %v", p.Metadata.Labels)
	}
	tl := p.Spec.Template.Metadata.Labels
	if tl[VersionLabel] != "v1" {
		t.Errorf("pod template labels %v", tl)
	}
	if _, touched := tl["version"]; touched {
		t.Error("the patch changes the template label \"version\" that the immutable selector uses: the API server would refuse it")
	}
	if p.Metadata.Annotations[ReleaseIDAnnotation] != "rb1:prod-eu/prod" || p.Metadata.Annotations[ActionAnnotation] != "act_1" {
		t.Errorf("annotations %v; want the rollback's release id and the action id", p.Metadata.Annotations)
	}
}

// servedDeployment is a Deployment whose status already says "rolled out"
// (the fake clientset runs no controller), with one Running pod at
// 127.0.0.1 answering on port.
func servedDeployment(mut ...func(*appsv1.Deployment)) []runtime.Object {
	d := readyDeployment(1)
	for _, m := range mut {
		m(d)
	}
	return []runtime.Object{d, pod("checkout-0", "127.0.0.1", corev1.PodRunning)}
}

func newRollbacker(cs *fake.Clientset, port int) *Rollbacker {
	return &Rollbacker{Kube: cs, HTTP: &http.Client{}, Health: quick(port, 1), RolloutTimeout: 5 * time.Second,
		RolloutPoll: 10 * time.Millisecond, Now: func() time.Time { return t0 }}
}

func auditTypes(res actionapi.Result) string {
	var ts []string
	for _, e := range res.Audit {
		ts = append(ts, e.Type)
	}
	return strings.Join(ts, " ")
}

func patches(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}

func TestRollbackPatchesRollsOutAndVerifiesHealth(t *testing.T) {
	t.Parallel()
	port := podServers(t, healthy)
	cs := fake.NewClientset(servedDeployment()...)
	res := newRollbacker(cs, port).Rollback(context.Background(), rollbackAction())
	if res.Status != actionapi.StatusDone || res.Outcome != actionapi.OutcomeRolledBack {
		t.Fatalf("result %+v", res)
	}
	if got := auditTypes(res); got != "rollback_initiated health_check_started health_check_passed rollback_completed" {
		t.Errorf("audit %s", got)
	}
	if res.Audit[0].Data["running_version"] != "v2" {
		t.Errorf("rollback_initiated does not record the version that was running: %v", res.Audit[0].Data)
	}
	d, _ := cs.AppsV1().Deployments("shop").Get(context.Background(), "checkout", metav1.GetOptions{})
	if d.Spec.Template.Spec.Containers[0].Image != "registry:5000/team/checkout:v1" || d.Spec.Template.Spec.Containers[1].Image != "envoy:1.30" {
		t.Errorf("images after the rollback: %v", images(d.Spec.Template.Spec.Containers))
	}
	if d.Labels[VersionLabel] != "v1" || d.Spec.Template.Labels[VersionLabel] != "v1" || d.Annotations[ActionAnnotation] != "act_1" {
		t.Errorf("labels %v, template labels %v, annotations %v", d.Labels, d.Spec.Template.Labels, d.Annotations)
	}
}

func TestRollbackThatFindsAnotherVersionChangesNothing(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(servedDeployment(withImage("registry:5000/team/checkout:v3"))...)
	res := newRollbacker(cs, 1).Rollback(context.Background(), rollbackAction())
	if res.Outcome != actionapi.OutcomeSkipped || res.Status != actionapi.StatusFailed || res.RunningVersion != "v3" ||
		auditTypes(res) != string(records.AuditRollbackSkipped) || patches(cs) != 0 {
		t.Errorf("result %+v with %d patches; want a skip that records v3 and patches nothing", res, patches(cs))
	}
}

func TestRollbackOfADigestPinnedImageAlertsWithoutAPatch(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(servedDeployment(withImage("registry:5000/team/checkout@sha256:" + hex64))...)
	res := newRollbacker(cs, 1).Rollback(context.Background(), rollbackAction())
	if res.Outcome != actionapi.OutcomeAlert || res.ErrorType != ErrTypePinnedByDigest ||
		auditTypes(res) != string(records.AuditManualInterventionRequired) || patches(cs) != 0 {
		t.Errorf("result %+v with %d patches", res, patches(cs))
	}
}

func TestRollbackOfAMissingDeploymentFailsWithItsType(t *testing.T) {
	t.Parallel()
	res := newRollbacker(fake.NewClientset(), 1).Rollback(context.Background(), rollbackAction())
	if res.Outcome != actionapi.OutcomeRollbackFailed || res.ErrorType != ErrTypeDeploymentNotFound || auditTypes(res) != "rollback_failed" {
		t.Errorf("result %+v", res)
	}
}

func TestRollbackThatFailsHealthIsRollbackFailed(t *testing.T) {
	t.Parallel()
	port := podServers(t, unhealthy)
	cs := fake.NewClientset(servedDeployment()...)
	res := newRollbacker(cs, port).Rollback(context.Background(), rollbackAction())
	if res.Outcome != actionapi.OutcomeRollbackFailed || res.ErrorType != ErrTypeHealthCheckFailed ||
		auditTypes(res) != "rollback_initiated health_check_started health_check_failed rollback_failed" {
		t.Errorf("result %+v, audit %s", res, auditTypes(res))
	}
}

func TestRollbackResumedAfterARestartDoesNotPatchAgain(t *testing.T) {
	t.Parallel()
	port := podServers(t, healthy)
	cs := fake.NewClientset(servedDeployment(withImage("registry:5000/team/checkout:v1"), func(d *appsv1.Deployment) {
		d.Annotations[ActionAnnotation] = "act_1"
	})...)
	res := newRollbacker(cs, port).Rollback(context.Background(), rollbackAction())
	if res.Status != actionapi.StatusDone || patches(cs) != 0 || res.Audit[0].Data["resumed"] != true {
		t.Errorf("result %+v after %d patches; want done, verified without a second patch", res, patches(cs))
	}
}

func TestAResumedRollbackOfADeploymentChangedSinceDoesNotClaimSuccess(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(servedDeployment(withImage("registry:5000/team/checkout:v3"), func(d *appsv1.Deployment) {
		d.Annotations[ActionAnnotation] = "act_1"
	})...)
	res := newRollbacker(cs, 1).Rollback(context.Background(), rollbackAction())
	if res.Status != actionapi.StatusFailed || res.ErrorType != ErrTypeChangedSincePatch || patches(cs) != 0 {
		t.Errorf("result %+v after %d patches", res, patches(cs))
	}
}

// A paused Deployment takes the patch but never rolls it out: the rollback
// says so at once rather than wait out its rollout timeout and blame time.
func TestRollbackOfAPausedDeploymentFailsAtOnceSayingSo(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(servedDeployment(func(d *appsv1.Deployment) {
		d.Spec.Paused = true
		d.Status.UpdatedReplicas = 0
	})...)
	r := newRollbacker(cs, 1)
	r.RolloutTimeout = 3 * time.Second
	start := time.Now()
	res := r.Rollback(context.Background(), rollbackAction())
	if res.ErrorType != ErrTypeRolloutFailed || !strings.Contains(res.Reason, "paused") || time.Since(start) > time.Second {
		t.Errorf("after %s: result %+v; want rollout_failed at once, naming the pause", time.Since(start).Round(time.Millisecond), res)
	}
}

// An action may lengthen the health check, but not without bound: a
// server or a bad config asking for days would hold the agent in one
// action long after the server gave up on its claim (an hour). The cut
// is said in the audit, so the person reading it knows why the check
// ended sooner than asked.
func TestAnActionsHealthTimeoutIsCappedAndTheAuditSaysSo(t *testing.T) {
	t.Parallel()
	port := podServers(t, healthy)
	for name, tc := range map[string]struct {
		timeout, want, requested string
	}{
		"days are cut to the cap":      {timeout: "1000h", want: "30m0s", requested: "1000h0m0s"},
		"within the cap is kept as is": {timeout: "10m"},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(servedDeployment()...)
			res := newRollbacker(cs, port).Rollback(context.Background(), rollbackAction(func(a *actionapi.Action) {
				a.Health = &actionapi.Health{Timeout: tc.timeout}
			}))
			if res.Status != actionapi.StatusDone || len(res.Audit) < 2 || res.Audit[1].Type != string(records.AuditHealthCheckStarted) {
				t.Fatalf("result %s %s: %s, audit %s", res.Outcome, res.ErrorType, res.Reason, auditTypes(res))
			}
			started := res.Audit[1]
			if tc.want == "" {
				if started.Data != nil {
					t.Errorf("health_check_started %q %v; want no cap mentioned", started.Message, started.Data)
				}
				return
			}
			if started.Data["timeout"] != tc.want || started.Data["requested_timeout"] != tc.requested ||
				!strings.Contains(started.Message, tc.want) || !strings.Contains(started.Message, tc.requested) {
				t.Errorf("health_check_started %q %v; want the check capped at %s, saying %s was asked", started.Message, started.Data, tc.want, tc.requested)
			}
		})
	}
}
