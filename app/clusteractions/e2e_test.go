package clusteractions_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// TestAgentOnARealControlPlane runs the cluster agent against a real
// kube-apiserver, etcd, controller manager, scheduler and kwok, and ripcord
// serve on SQLite. The steps build on each other as a release's life does.
func TestAgentOnARealControlPlane(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.InstallRolloutCRD()
	k.Namespace(ns)
	healthPort := k8stest.ServePods(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"healthy"}`))
	}))
	s := startServer(t, testdb.MigratedURL(t, "sqlite"))
	sc := &scene{t: t, k: k, s: s, ctx: context.Background()}
	sc.agent = startAgent(t, k, s, healthPort)
	agentMetrics := httptest.NewServer(sc.agent.Handler())
	defer agentMetrics.Close()
	// The first step's Progressing is seen only by a watch already running.
	sc.eventually("the agent to have listed the cluster (/healthz 200)", func() bool {
		resp, err := http.Get(agentMetrics.URL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	steps := []struct {
		name string
		run  func(*scene)
	}{
		{"a new version is Progressing, then Healthy", newVersion},
		{"the failed version is rolled back by an action", rollBack},
		{"a rollback is skipped when another version is live", skipped},
		{"a digest-pinned image alerts and is left alone", digestPinned},
		{"a scale-only change is no release event", scaleOnly},
		{"a Rollout custom resource reports its phases and steps", rolloutPhases(agentMetrics.URL)},
		{"facts survive the server being down", outage(agentMetrics.URL)},
	}
	for _, st := range steps {
		// The server's helpers report to the step that uses them.
		ok := t.Run(st.name, func(t *testing.T) {
			s.t = t
			defer func() { s.t = sc.t }()
			st.run(&scene{t: t, k: k, s: s, agent: sc.agent, ctx: sc.ctx})
		})
		if !ok {
			t.Fatalf("step %q failed; the later steps build on it", st.name)
		}
	}
	resp, err := http.Get(agentMetrics.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("agent /healthz: %v %v", resp, err)
	}
	if sent := metric(t, agentMetrics.URL+"/metrics", "ripcord_agent_facts_sent_total", "", ""); sent == 0 {
		t.Error("ripcord_agent_facts_sent_total is 0 after the whole story")
	}
}

func newVersion(sc *scene) {
	sc.openRelease("r1", "app", "registry:5000/team/app:v1", "")
	sc.create(tracked("app", "registry:5000/team/app:v1", "v1", "r1", 2))
	sc.waitState("r1", "healthy")
	sc.openRelease("r2", "app", "registry:5000/team/app:v2@"+digest, "")
	sc.update("app", release("registry:5000/team/app:v2@"+digest, "v2", "r2"))
	sc.waitState("r2", "healthy")
	sc.waitState("r1", "superseded")
	for _, id := range []string{"r1", "r2"} {
		if got := sc.transitions(id); len(got) < 2 || got[0] != "opened>progressing" || got[1] != "progressing>healthy" {
			sc.t.Errorf("%s went %v; want opened>progressing>healthy from the agent's facts", id, got)
		}
	}
}

func rollBack(sc *scene) {
	sc.openRelease("rb1", "app", "registry:5000/team/app:v1", "r2")
	id := sc.s.enqueue(clusteractions.Action{Cluster: "prod-eu", Kind: actionapi.KindRollback, Namespace: ns,
		Deployment: "app", TargetVersion: "v1", FailedVersion: "v2", ReleaseID: "rb1", RollbackOf: "r2",
		Reason: "deploy of v2 failed after 3 retries"})
	st := sc.finished(id)
	d := sc.get("app") // as the agent left it when it reported done
	if st.State != clusteractions.StateDone || st.Result.Outcome != actionapi.OutcomeRolledBack || st.Result.RunningVersion != "v2" {
		sc.t.Fatalf("action ended %s: %+v", st.State, st.Result)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry:5000/team/app:v1" {
		sc.t.Errorf("app container runs %q; want registry:5000/team/app:v1 (registry and port kept, digest dropped)", img)
	}
	if img := d.Spec.Template.Spec.Containers[1].Image; img != "registry:5000/mesh/envoy:1.30" {
		sc.t.Errorf("the sidecar was changed to %q", img)
	}
	if d.Labels[cluster.VersionLabel] != "v1" || d.Spec.Template.Labels[cluster.VersionLabel] != "v1" ||
		d.Annotations[cluster.ReleaseIDAnnotation] != "rb1" {
		sc.t.Errorf("labels %v, template labels %v, annotations %v", d.Labels, d.Spec.Template.Labels, d.Annotations)
	}
	// Seed 000: the controller observed the patched generation, every
	// replica is updated and no old replica is left.
	if s := d.Status; s.ObservedGeneration != d.Generation || s.UpdatedReplicas != *d.Spec.Replicas || s.Replicas != *d.Spec.Replicas {
		sc.t.Errorf("reported done before the rollout finished: %+v", d.Status)
	}
	if got := auditTypesOf(sc.s.audit("r2"), id); got != "rollback_initiated health_check_started health_check_passed rollback_completed" {
		sc.t.Errorf("audit of r2 for the action: %q", got)
	}
	// The patched annotation joins the facts that follow to the rollback
	// release; when it is healthy, the failed one is rolled back.
	sc.waitState("rb1", "healthy")
	sc.waitState("r2", "rolled-back")
}

func skipped(sc *scene) {
	before := sc.get("app")
	id := sc.s.enqueue(clusteractions.Action{Cluster: "prod-eu", Kind: actionapi.KindRollback, Namespace: ns,
		Deployment: "app", TargetVersion: "v1", FailedVersion: "v7", ReleaseID: "rb-v7", RollbackOf: "r7"})
	st := sc.finished(id)
	if st.State != clusteractions.StateFailed || st.Result.Outcome != actionapi.OutcomeSkipped || st.Result.RunningVersion != "v1" {
		sc.t.Errorf("action ended %s: %+v", st.State, st.Result)
	}
	if got := auditTypesOf(sc.s.audit("r7"), id); got != "rollback_skipped" {
		sc.t.Errorf("audit %q, want rollback_skipped", got)
	}
	if after := sc.get("app"); after.Generation != before.Generation {
		sc.t.Errorf("a skipped rollback changed the Deployment: generation %d -> %d", before.Generation, after.Generation)
	}
}

func digestPinned(sc *scene) {
	d := tracked("pinned", "registry:5000/team/pinned@"+digest, "v2", "p1", 1)
	delete(d.Labels, cluster.TrackedLabel)
	sc.create(d)
	sc.eventually("pinned to roll out", func() bool { return rolledOut(sc.get("pinned")) })
	before := sc.get("pinned")
	id := sc.s.enqueue(clusteractions.Action{Cluster: "prod-eu", Kind: actionapi.KindRollback, Namespace: ns,
		Deployment: "pinned", TargetVersion: "v1", FailedVersion: "v2", RollbackOf: "p1"})
	st := sc.finished(id)
	if st.Result.Outcome != actionapi.OutcomeAlert || st.Result.ErrorType != cluster.ErrTypePinnedByDigest {
		sc.t.Errorf("action ended %s: %+v", st.State, st.Result)
	}
	if got := auditTypesOf(sc.s.audit("p1"), id); got != "manual_intervention_required" {
		sc.t.Errorf("audit %q", got)
	}
	if after := sc.get("pinned"); after.Generation != before.Generation {
		sc.t.Error("the digest-pinned Deployment was changed")
	}
}

func scaleOnly(sc *scene) {
	releases := sc.count("rb1", records.AuditDeploymentReceived)
	sc.update("app", func(d *appsv1.Deployment) { three := int32(3); d.Spec.Replicas = &three })
	generation := sc.get("app").Generation
	sc.eventually("a fact of the scaled generation", func() bool {
		for _, e := range sc.s.audit("rb1") {
			if e.Type == records.AuditFactReceived && fmt.Sprint(e.Data["generation"]) == strconv.FormatInt(generation, 10) && e.Data["phase"] == "Healthy" {
				return true
			}
		}
		return false
	})
	if n := sc.count("rb1", records.AuditDeploymentReceived); n != releases {
		sc.t.Errorf("deployment_received %d -> %d: a scale was taken for a release", releases, n)
	}
	if st := sc.state("rb1"); st != "healthy" {
		sc.t.Errorf("rb1 is %s after a scale", st)
	}
}

func rolloutPhases(agentURL string) func(*scene) {
	return func(sc *scene) {
		sc.openRelease("ro1", "baggage", "registry:5000/air/baggage:v9", "")
		ro := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"name": "baggage", "namespace": ns,
				"labels":      map[string]any{cluster.TrackedLabel: "true"},
				"annotations": map[string]any{cluster.ReleaseIDAnnotation: "ro1"}},
			"spec": map[string]any{"replicas": int64(2),
				"strategy": map[string]any{"canary": map[string]any{"steps": []any{
					map[string]any{"setWeight": int64(20)}, map[string]any{"pause": map[string]any{}},
					map[string]any{"setWeight": int64(100)}}}},
				"template": map[string]any{"spec": map[string]any{"containers": []any{
					map[string]any{"name": "baggage", "image": "registry:5000/air/baggage:v9"}}}}}}}
		rollouts := sc.k.Dynamic.Resource(k8stest.RolloutResource).Namespace(ns)
		created, err := rollouts.Create(sc.ctx, ro, metav1.CreateOptions{})
		if err != nil {
			sc.t.Fatal(err)
		}
		// The test plays the Rollouts controller, writing status as it does.
		setStatus := func(status map[string]any) {
			sc.t.Helper()
			cur, err := rollouts.Get(sc.ctx, "baggage", metav1.GetOptions{})
			if err != nil {
				sc.t.Fatal(err)
			}
			cur.Object["status"] = status
			if _, err := rollouts.UpdateStatus(sc.ctx, cur, metav1.UpdateOptions{}); err != nil {
				sc.t.Fatal(err)
			}
		}
		notObserved := metric(sc.t, agentURL+"/metrics", "ripcord_agent_facts_skipped_total", "reason", cluster.SkipNotObserved)
		// The engine's early Healthy, before the controller saw the spec.
		setStatus(map[string]any{"observedGeneration": "0", "phase": "Healthy", "currentPodHash": "old"})
		sc.eventually("the agent to skip the unobserved status", func() bool {
			return metric(sc.t, agentURL+"/metrics", "ripcord_agent_facts_skipped_total", "reason", cluster.SkipNotObserved) > notObserved
		})
		gen := created.GetGeneration()
		observed := func(phase string, step int64) map[string]any {
			return map[string]any{"observedGeneration": strconv.FormatInt(gen, 10), "phase": phase, "currentStepIndex": step,
				"currentPodHash": "6f7d9c", "abort": false}
		}
		setStatus(observed("Progressing", 0))
		sc.waitState("ro1", "progressing")
		setStatus(observed("Paused", 1))
		sc.waitState("ro1", "paused")
		setStatus(observed("Healthy", 3))
		sc.waitState("ro1", "healthy")
		if got := sc.transitions("ro1"); len(got) != 3 || got[0] != "opened>progressing" || got[1] != "progressing>paused" || got[2] != "paused>healthy" {
			sc.t.Errorf("ro1 went %v", got)
		}
		for _, e := range sc.s.audit("ro1") {
			if e.Type == records.AuditFactReceived && e.Data["phase"] == "Paused" &&
				(fmt.Sprint(e.Data["step"]) != "1" || fmt.Sprint(e.Data["step_count"]) != "3" || e.Data["pod_hash"] != "6f7d9c") {
				sc.t.Errorf("Paused fact data %v; want step 1 of 3 and the pod hash", e.Data)
			}
		}
	}
}

func outage(agentURL string) func(*scene) {
	return func(sc *scene) {
		names := []string{"svc-a", "svc-b", "svc-c"}
		for _, n := range names {
			sc.openRelease(n+"-1", n, "registry:5000/team/"+n+":v1", "")
			sc.create(tracked(n, "registry:5000/team/"+n+":v1", "v1", n+"-1", 1))
		}
		for _, n := range names {
			sc.waitState(n+"-1", "healthy")
			sc.openRelease(n+"-2", n, "registry:5000/team/"+n+":v2", "")
		}
		sc.s.Stop()
		for _, n := range names {
			sc.update(n, release("registry:5000/team/"+n+":v2", "v2", n+"-2"))
		}
		sc.eventually("the three to roll out and their facts to be spooled", func() bool {
			for _, n := range names {
				if !rolledOut(sc.get(n)) {
					return false
				}
			}
			return metric(sc.t, agentURL+"/metrics", "ripcord_agent_facts_spooled", "", "") >= 6
		})
		sc.s.Start()
		for _, n := range names {
			sc.waitState(n+"-2", "healthy")
			sc.waitState(n+"-1", "superseded")
		}
		// Resyncs send the same facts again; the server keeps each once.
		sc.eventually("a resync's repeats to reach the server", func() bool {
			return metric(sc.t, sc.s.URL+"/metrics", "ripcord_facts_total", "outcome", "duplicate") > 0
		})
		for _, n := range names {
			id := n + "-2"
			if got := sc.transitions(id); len(got) < 2 || got[0] != "opened>progressing" || got[1] != "progressing>healthy" {
				sc.t.Errorf("%s went %v: a fact of the outage was lost", id, got)
			}
			seen := map[string]int{}
			for _, e := range sc.s.audit(id) {
				if e.Type == records.AuditFactReceived {
					seen[e.FactID]++
				}
			}
			for fact, n := range seen {
				if n > 1 {
					sc.t.Errorf("%s: fact %s applied %d times", id, fact, n)
				}
			}
		}
	}
}
