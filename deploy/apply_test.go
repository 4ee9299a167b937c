package deploy

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/ripcord/ripcord/internal/k8stest"
)

// serviceMonitorCRD is the smallest ServiceMonitor definition the API server
// accepts: the chart's object is checked for its kind and metadata, its spec
// is Prometheus Operator's business.
const serviceMonitorCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Every object every values file renders is accepted by a real API server:
// a server-side dry run with strict field validation, so a misspelt field or
// a wrong type fails here instead of at helm install.
func TestRenderedObjectsPassServerSideDryRun(t *testing.T) {
	t.Parallel()
	helmBin(t)
	cluster := k8stest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster.Namespace(releaseNamespace)
	installCRD(ctx, t, cluster, serviceMonitorCRD)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cluster.Kube.Discovery()))
	for _, values := range []string{"", "sqlite-default.yaml", "postgres-replicas-3.yaml", "agent-enabled.yaml", "agent-namespaced.yaml", "agent-state-claim.yaml", "cluster-tokens-secret.yaml"} {
		t.Run("values="+values, func(t *testing.T) {
			for _, o := range mustRender(t, values) {
				u := toUnstructured(t, o)
				gvk := u.GroupVersionKind()
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Errorf("%s %s: the API server does not serve it: %v", gvk, u.GetName(), err)
					continue
				}
				res := cluster.Dynamic.Resource(m.Resource)
				opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}
				if m.Scope.Name() == meta.RESTScopeNameNamespace {
					ns := u.GetNamespace()
					if ns == "" {
						ns = releaseNamespace
					}
					_, err = res.Namespace(ns).Create(ctx, u, opts)
				} else {
					_, err = res.Create(ctx, u, opts)
				}
				if err != nil {
					t.Errorf("%s %s: rejected: %v", gvk.Kind, u.GetName(), err)
				}
			}
		})
	}
}

// installCRD creates a CustomResourceDefinition and waits until it is
// Established, before which its kind cannot be created.
func installCRD(ctx context.Context, t *testing.T, cluster *k8stest.Cluster, doc string) {
	t.Helper()
	u := toUnstructured(t, fromYAML(t, doc).(map[string]any))
	crds := cluster.Dynamic.Resource(crdResource)
	if _, err := crds.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD %s: %v", u.GetName(), err)
	}
	for {
		got, err := crds.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get CRD %s: %v", u.GetName(), err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if get(c, "type") == "Established" && get(c, "status") == "True" {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("CRD %s never Established", u.GetName())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// toUnstructured goes through JSON so numbers are int64/float64, the types
// unstructured objects are made of (yaml.v3 gives int).
func toUnstructured(t *testing.T, o map[string]any) *unstructured.Unstructured {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}
