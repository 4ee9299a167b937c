package k8stest

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RolloutResource is Argo Rollouts' resource, as InstallRolloutCRD serves it.
var RolloutResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// InstallRolloutCRD installs a Rollout-shaped custom resource of its own
// (open schema, status subresource; not Argo's, whose module is too heavy
// to import) and waits until discovery serves it.
func (c *Cluster) InstallRolloutCRD() {
	c.t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "rollouts.argoproj.io"},
		"spec": map[string]any{"group": "argoproj.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "Rollout", "listKind": "RolloutList", "plural": "rollouts", "singular": "rollout"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
					"x-kubernetes-preserve-unknown-fields": true}}}}}}}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Dynamic.Resource(gvr).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("k8stest: install the Rollout CRD: %v", err)
	}
	err := poll(ctx, "discovery to serve the Rollout CRD", func() (bool, error) {
		list, err := c.Kube.Discovery().ServerResourcesForGroupVersion(RolloutResource.GroupVersion().String())
		return err == nil && len(list.APIResources) > 0, nil
	})
	if err != nil {
		c.t.Fatalf("k8stest: %v", err)
	}
}
