package k8stest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestADeploymentRollsOutOnTheFakeNode shows what the harness promises:
// a Deployment gets its ReplicaSet, its pods are scheduled onto the kwok
// node and run with loopback addresses.
func TestADeploymentRollsOutOnTheFakeNode(t *testing.T) {
	c := Start(t)
	c.Namespace("smoke")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	two := int32(2)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "smoke"},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry:5000/web:v1"}}}}}}
	if _, err := c.Kube.AppsV1().Deployments("smoke").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := poll(ctx, "web to be available", func() (bool, error) {
		got, err := c.Kube.AppsV1().Deployments("smoke").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.AvailableReplicas == 2 && got.Status.ObservedGeneration == got.Generation, err
	})
	if err != nil {
		c.dumpLogs()
		t.Fatal(err)
	}
	pods, err := c.Kube.CoreV1().Pods("smoke").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("pods: %v %v", pods, err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Status.PodIP, "127.0.0.") || p.Spec.NodeName != NodeName {
			t.Errorf("pod %s: phase %s, ip %q, node %q", p.Name, p.Status.Phase, p.Status.PodIP, p.Spec.NodeName)
		}
	}
}

// A port taken between being found free and being bound by its component
// (here etcd's, by a listener of the test) makes Start begin again on new
// ports, not fail the test that asked for a cluster.
func TestStartBeginsAgainWhenAPortIsTakenMeanwhile(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var calls int
	findPorts = func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if calls == 1 && err == nil {
			ports[0] = taken.Addr().(*net.TCPAddr).Port
		}
		return ports, err
	}
	t.Cleanup(func() { findPorts = freePorts })
	c := Start(t)
	if calls != 2 {
		t.Errorf("ports were found %d times, want 2: once taken, once for the start that worked", calls)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the control plane started on new ports does not answer: %v", err)
	}
}
