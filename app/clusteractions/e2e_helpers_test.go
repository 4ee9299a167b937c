package clusteractions_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/records"
)

const (
	ns      = "shop"
	digest  = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	waitFor = 60 * time.Second
)

// scene is a real control plane, `ripcord serve` and `ripcord agent` wired
// together, as an operator would run them.
type scene struct {
	t     *testing.T
	k     *k8stest.Cluster
	s     *server
	agent *cluster.Agent
	ctx   context.Context
}

func startAgent(t *testing.T, k *k8stest.Cluster, s *server, healthPort int) *cluster.Agent {
	h := cluster.DefaultHealth()
	h.Port, h.Interval, h.Timeout, h.RequestTimeout = healthPort, 250*time.Millisecond, 60*time.Second, 2*time.Second
	a, _ := agentOf(t, cluster.Config{Cluster: "prod-eu", Server: s.URL, Token: func() (string, error) { return euToken, nil },
		StateDir: t.TempDir(), Resync: 3 * time.Second, PollWait: 2 * time.Second, MaxBackoff: time.Second,
		Health: h, RolloutTimeout: 90 * time.Second, RolloutPoll: 250 * time.Millisecond}, k.Kube, k.Dynamic, "agent")
	return a
}

// agentOf runs the agent of cfg, with kube and dyn, until stop is called
// or the test ends; its log (cfg.Log) is discarded, or written to stderr
// with the attribute agent=name when RIPCORD_E2E_LOG is set.
func agentOf(t *testing.T, cfg cluster.Config, kube kubernetes.Interface, dyn dynamic.Interface, name string) (a *cluster.Agent, stop func()) {
	t.Helper()
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("RIPCORD_E2E_LOG") != "" {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("agent", name)
	}
	a, err := cluster.New(cfg, kube, dyn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	t.Cleanup(stop)
	return a, stop
}

// openRelease opens a release record as release tooling does.
func (sc *scene) openRelease(id, app, image, rollbackOf string) {
	sc.t.Helper()
	body := map[string]any{"release_id": id, "app": app, "environment": "prod", "cluster": "prod-eu", "image": image}
	if rollbackOf != "" {
		body["kind"], body["rollback_of"], body["rollback_reason"] = "rollback", rollbackOf, "deploy of "+rollbackOf+" failed"
	}
	var out map[string]any
	if code := sc.s.call(http.MethodPost, "/api/v1/releases", apiToken, body, &out); code != http.StatusCreated {
		sc.t.Fatalf("open release %s: %d %v", id, code, out)
	}
}

func (sc *scene) state(id string) string {
	var r struct{ State string }
	sc.s.call(http.MethodGet, "/api/v1/releases/"+id, apiToken, nil, &r)
	return r.State
}

func (sc *scene) waitState(id, want string) {
	sc.t.Helper()
	sc.eventually("release "+id+" "+want, func() bool { return sc.state(id) == want })
}

func (sc *scene) eventually(what string, cond func() bool) {
	sc.t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			if bad := sc.k.Exited(); len(bad) > 0 {
				sc.t.Logf("control plane components that exited: %v", bad)
			}
			sc.t.Fatalf("timed out after %s waiting for %s", waitFor, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// running says whether the server counts a workload as running release:
// whether the release has an observation.
func (sc *scene) running(release string) bool {
	obs, err := records.NewStore(sc.s.db).Observed(context.Background(), []string{release})
	if err != nil {
		sc.t.Fatal(err)
	}
	return len(obs) > 0
}

// transitions lists a release's state changes ("opened>progressing").
func (sc *scene) transitions(id string) []string {
	var out []string
	for _, e := range sc.s.audit(id) {
		if e.Type == records.AuditStateChanged {
			out = append(out, e.Data["from"].(string)+">"+e.Data["to"].(string))
		}
	}
	return out
}

func (sc *scene) count(id string, t records.AuditType) int {
	n := 0
	for _, e := range sc.s.audit(id) {
		if e.Type == t {
			n++
		}
	}
	return n
}

// tracked is a Deployment the agent watches: the release id on its own
// metadata, the version label on it and its pod template, an application
// container named like it and a sidecar. minReadySeconds keeps each new
// revision Progressing for a moment, so the phase is observable.
func tracked(name, image, version, release string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{cluster.TrackedLabel: "true", cluster.VersionLabel: version},
			Annotations: map[string]string{cluster.ReleaseIDAnnotation: release}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, MinReadySeconds: 1,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, cluster.VersionLabel: version}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: name, Image: image}, {Name: "proxy", Image: "registry:5000/mesh/envoy:1.30"}}}}},
	}
}

func (sc *scene) create(d *appsv1.Deployment) {
	sc.t.Helper()
	if _, err := sc.k.Kube.AppsV1().Deployments(d.Namespace).Create(sc.ctx, d, metav1.CreateOptions{}); err != nil {
		sc.t.Fatalf("create %s: %v", d.Name, err)
	}
}

// update changes a Deployment as a deploy tool would (read, modify, write,
// again on a conflict with the controllers).
func (sc *scene) update(name string, change func(*appsv1.Deployment)) {
	sc.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := sc.k.Kube.AppsV1().Deployments(ns).Get(sc.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(d)
		_, err = sc.k.Kube.AppsV1().Deployments(ns).Update(sc.ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		sc.t.Fatalf("update %s: %v", name, err)
	}
}

// release moves a Deployment to a new version and release.
func release(image, version, id string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = image
		d.Labels[cluster.VersionLabel], d.Spec.Template.Labels[cluster.VersionLabel] = version, version
		d.Annotations[cluster.ReleaseIDAnnotation] = id
	}
}

func (sc *scene) get(name string) *appsv1.Deployment {
	sc.t.Helper()
	d, err := sc.k.Kube.AppsV1().Deployments(ns).Get(sc.ctx, name, metav1.GetOptions{})
	if err != nil {
		sc.t.Fatal(err)
	}
	return d
}

func rolledOut(d *appsv1.Deployment) bool {
	s := d.Status
	return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == *d.Spec.Replicas &&
		s.Replicas == *d.Spec.Replicas && s.AvailableReplicas == *d.Spec.Replicas
}

// finished waits until the agent reported how an action ended.
func (sc *scene) finished(id string) clusteractions.Stored {
	sc.t.Helper()
	var st clusteractions.Stored
	sc.eventually("action "+id+" to finish", func() bool {
		st = sc.s.action(id)
		return st.State == clusteractions.StateDone || st.State == clusteractions.StateFailed
	})
	return st
}

func auditTypesOf(evs []records.AuditEvent, action string) string {
	var ts []string
	for _, e := range evs {
		if e.Data["action_id"] == action {
			ts = append(ts, string(e.Type))
		}
	}
	return strings.Join(ts, " ")
}

// metric reads a counter or gauge from a /metrics page.
func metric(t *testing.T, url, name, label, value string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, m := range families[name].GetMetric() {
		match := label == ""
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				match = true
			}
		}
		if match {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}
