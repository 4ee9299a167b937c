package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Pod behaviours of the local health servers.
var (
	healthy   = func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"status":"healthy"}`)) }
	unhealthy = func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"status":"degraded"}`)) }
	failing   = func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"status":"healthy"}`, http.StatusInternalServerError)
	}
	notJSON = func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`healthy`)) }
	slow    = func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
		healthy(w, r)
	}
)

// podServers serves one behaviour per loopback address (127.0.0.1,
// 127.0.0.2, …) on one port, as pods of one Deployment listen on the same
// port at different IPs. It returns the port.
func podServers(t *testing.T, behaviours ...http.HandlerFunc) int {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		first, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := first.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{first}
		for i := 2; i <= len(behaviours); i++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:%d", i, port))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		if len(lns) < len(behaviours) {
			for _, ln := range lns {
				ln.Close()
			}
			continue
		}
		for i, ln := range lns {
			srv := &http.Server{Handler: behaviours[i], ReadHeaderTimeout: time.Second}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
		}
		return port
	}
	t.Fatal("no port free on every loopback address")
	return 0
}

func pod(name, ip string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "checkout"}},
		Status: corev1.PodStatus{Phase: phase, PodIP: ip}}
}

// readyDeployment has n ready replicas selected by app=checkout.
func readyDeployment(n int32) *appsv1.Deployment {
	return deployment(func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr(n)
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "checkout"}}
		d.Spec.Template.Labels = map[string]string{"app": "checkout"}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	})
}

func quick(port, minHealthy int) HealthConfig {
	return HealthConfig{Port: port, Path: "/health", MinHealthy: minHealthy, RequestTimeout: 300 * time.Millisecond,
		Timeout: 20 * time.Second, Interval: 10 * time.Millisecond, MaxAppFailures: 3}
}

func TestCheckHealth(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		pods       []http.HandlerFunc
		minHealthy int
		pending    bool
		want       bool
		reason     string
	}{
		"one healthy pod is enough by default":           {pods: []http.HandlerFunc{healthy}, minHealthy: 1, want: true, reason: "1 of 1"},
		"200 with another status is not healthy":         {pods: []http.HandlerFunc{unhealthy}, minHealthy: 1, reason: "failed 3 times in a row"},
		"500 even with a healthy body is not healthy":    {pods: []http.HandlerFunc{failing}, minHealthy: 1, reason: "answered 500"},
		"200 that is not JSON is not healthy":            {pods: []http.HandlerFunc{notJSON}, minHealthy: 1, reason: "without"},
		"a pod slower than the request timeout":          {pods: []http.HandlerFunc{slow}, minHealthy: 1, reason: "deadline exceeded"},
		"min_healthy 2 with two of three healthy passes": {pods: []http.HandlerFunc{healthy, unhealthy, healthy}, minHealthy: 2, want: true, reason: "2 of 3"},
		"min_healthy 3 with two of three healthy fails":  {pods: []http.HandlerFunc{healthy, unhealthy, healthy}, minHealthy: 3, reason: "2 of 3 running pods answered healthy, 3 needed"},
		"a pod not Running is not probed":                {pods: []http.HandlerFunc{healthy}, pending: true, minHealthy: 1, reason: "no Running pod"},
	} {
		t.Run(name, func(t *testing.T) {
			port := podServers(t, tc.pods...)
			objs := []runtime.Object{readyDeployment(int32(len(tc.pods)))}
			for i := range tc.pods {
				phase := corev1.PodRunning
				if tc.pending {
					phase = corev1.PodPending
				}
				objs = append(objs, pod(fmt.Sprintf("checkout-%d", i), fmt.Sprintf("127.0.0.%d", i+1), phase))
			}
			rep := CheckHealth(context.Background(), fake.NewClientset(objs...), &http.Client{}, "shop", "checkout", quick(port, tc.minHealthy))
			if rep.Passed != tc.want || !strings.Contains(rep.Reason, tc.reason) {
				t.Errorf("passed=%v reason %q; want passed=%v and a reason with %q", rep.Passed, rep.Reason, tc.want, tc.reason)
			}
		})
	}
}

func TestCheckHealthEndsAtOnceOnAnAPIError(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(readyDeployment(1))
	var gets atomic.Int32
	cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets.Add(1)
		return true, nil, errors.New("etcdserver: leader changed")
	})
	rep := CheckHealth(context.Background(), cs, &http.Client{}, "shop", "checkout", quick(1, 1))
	if rep.Passed || !rep.APIError || gets.Load() != 1 || !strings.Contains(rep.Reason, "leader changed") {
		t.Errorf("report %+v after %d reads; want a failure on the first API error", rep, gets.Load())
	}
}

func TestCheckHealthWaitsForReadyReplicasUntilItsTimeout(t *testing.T) {
	t.Parallel()
	d := readyDeployment(2)
	d.Status.ReadyReplicas = 1
	cfg := quick(1, 1)
	cfg.Timeout = 100 * time.Millisecond
	rep := CheckHealth(context.Background(), fake.NewClientset(d), &http.Client{}, "shop", "checkout", cfg)
	if rep.Passed || rep.APIError || !strings.Contains(rep.Reason, "1 of 2 replicas ready") {
		t.Errorf("report %+v; want a timeout that says 1 of 2 replicas were ready", rep)
	}
}

// A pod whose health URL redirects gives no health answer: the check does
// not follow it, neither to another host that answers healthy nor to a
// login page that answers 200, and its reason names where it led.
func TestCheckHealthDoesNotFollowARedirect(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		healthy(w, r)
	}))
	defer elsewhere.Close()
	login := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		_, _ = w.Write([]byte(`<html>sign in</html>`))
	}))
	defer login.Close()
	// The agent's client, and one a Rollbacker is given (Rollbacker.HTTP).
	clients := map[string]*http.Client{"PodClient": PodClient(), "a client that follows redirects": {}}
	for name, target := range map[string]string{
		"to another host that answers healthy": elsewhere.URL + "/health",
		"to a login page that answers 200":     login.URL + "/login?next=/health",
	} {
		for with, client := range clients {
			t.Run(name+", "+with, func(t *testing.T) {
				asked.Store(0)
				port := podServers(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target, http.StatusFound) })
				rep := CheckHealth(context.Background(), fake.NewClientset(readyDeployment(1), pod("checkout-0", "127.0.0.1", corev1.PodRunning)),
					client, "shop", "checkout", quick(port, 1))
				if rep.Passed || !strings.Contains(rep.Reason, "answered 302") || !strings.Contains(rep.Reason, target) {
					t.Errorf("passed=%v reason %q; want a failure naming the 302 and its Location %s", rep.Passed, rep.Reason, target)
				}
				if n := asked.Load(); n > 0 {
					t.Errorf("the redirect was followed %d times", n)
				}
			})
		}
	}
}
