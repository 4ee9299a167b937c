package cluster

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// An Argo Rollout with spec.workloadRef runs the pod template of a
// Deployment in its namespace, which Argo keeps scaled to 0. The two ties
// that follow:
//   - the Rollout's fact takes the Deployment's images, from a cache of
//     the Deployments of the watched namespaces (refDeployments); when a
//     Deployment's template changes there, the Rollouts that reference it
//     are read again, so a fact skipped because the cache was behind the
//     Rollout's status is sent then, not at the next resync;
//   - a tracked Deployment that a tracked Rollout references is not
//     reported as a workload of its own (withhold): at 0 replicas it is
//     Healthy, which says nothing of its release, which the Rollout runs.
//     It is reported again once no tracked Rollout references it.
//
// The cache covers every Deployment of the watched namespaces, not only
// the tracked ones, because Argo's Deployment usually is not labelled. It
// is one watch, started with the Rollout watch (a cluster without Argo
// Rollouts does not pay for it), and keeps of each Deployment only what a
// fact takes (slimDeployment): not its status, annotations or managed
// fields, which make most of a Deployment's size. The RBAC is unchanged:
// the agent already lists and watches Deployments.

// workloadRefs are the references between tracked Rollouts and
// Deployments, as the informers' handlers last saw them; watcher.serial
// guards them.
type workloadRefs struct {
	// rollouts holds each tracked Rollout with a workloadRef: the key
	// (namespace/name) of the Deployment it references and its object as
	// last handled, which is read again when that Deployment changes.
	rollouts map[types.UID]refRollout
	// byDeployment lists the Rollouts that reference a Deployment (key).
	byDeployment map[string]map[types.UID]bool
	// withheld holds each tracked Deployment not reported because a
	// Rollout references it, as last handled: it is reported when the
	// last reference goes.
	withheld map[string]*appsv1.Deployment
}

type refRollout struct {
	deployment string
	obj        *unstructured.Unstructured
}

func newWorkloadRefs() workloadRefs {
	return workloadRefs{rollouts: map[types.UID]refRollout{}, byDeployment: map[string]map[types.UID]bool{},
		withheld: map[string]*appsv1.Deployment{}}
}

// refDeployments starts the cache of the Deployments that Rollouts may
// reference; Deployment changes that move its generation (a new
// template) read the Rollouts that reference it again. Its requests are
// noted in list, the Deployment watch's (deploymentsTrouble): the Rollout
// watch, and after it the Deployment watch, wait for this cache, so a
// list the RBAC forbids here is what keeps the agent from starting.
func (w *watcher) refDeployments(ctx context.Context, cs kubernetes.Interface, namespace string, list *listState) cache.SharedIndexInformer {
	res := cs.AppsV1().Deployments(namespace)
	lw := notedListWatch(list, nil, res.List, res.Watch)
	inf := cache.NewSharedIndexInformerWithOptions(lw, &appsv1.Deployment{}, cache.SharedIndexInformerOptions{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, ObjectDescription: "deployments.apps"})
	_ = inf.SetTransform(slimDeployment)
	w.serial.Lock()
	w.refCache = inf.GetStore()
	w.serial.Unlock()
	w.countRestarts(inf, "workloadref-deployments")
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: w.templateChanged,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(metav1.Object)
			n, ok2 := obj.(metav1.Object)
			if ok1 && ok2 && o.GetGeneration() != n.GetGeneration() {
				w.templateChanged(obj)
			}
		},
	})
	go inf.RunWithContext(ctx)
	return inf
}

// slimDeployment keeps of a Deployment what a Rollout's fact takes from
// it (WithWorkloadRef): its name, generation and containers' images.
func slimDeployment(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	slim := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, UID: d.UID,
		Generation: d.Generation, ResourceVersion: d.ResourceVersion}}
	for _, c := range d.Spec.Template.Spec.Containers {
		slim.Spec.Template.Spec.Containers = append(slim.Spec.Template.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	return slim, nil
}

// referenced is the Deployment namespace/name from the cache; watcher.serial
// is held.
func (w *watcher) referenced(namespace, name string) (*appsv1.Deployment, error) {
	if w.refCache == nil {
		return nil, fmt.Errorf("spec.workloadRef Deployment %s/%s: the Deployments are not watched", namespace, name)
	}
	obj, exists, err := w.refCache.GetByKey(namespace + "/" + name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("spec.workloadRef Deployment %s/%s: %w", namespace, name, err)
	case !exists:
		return nil, fmt.Errorf("spec.workloadRef Deployment %s/%s does not exist", namespace, name)
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, fmt.Errorf("spec.workloadRef Deployment %s/%s: the cache holds a %T", namespace, name, obj)
	}
	return d, nil
}

// templateChanged reads again the Rollouts that reference Deployment obj,
// as they were last handled; a fact that changed is sent.
func (w *watcher) templateChanged(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	w.serial.Lock()
	defer w.serial.Unlock()
	for uid := range w.refs.byDeployment[d.Namespace+"/"+d.Name] {
		w.observe(w.rolloutFact, w.refs.rollouts[uid].obj, false)
	}
}

// trackRollout records which Deployment a tracked Rollout references, if
// any; watcher.serial is held. A Deployment no Rollout references any
// longer is reported again (release).
func (w *watcher) trackRollout(obj any, gone bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	uid := u.GetUID()
	was := w.refs.rollouts[uid].deployment
	now := ""
	if name, isRef, err := WorkloadRef(u); !gone && isRef && err == nil {
		now = u.GetNamespace() + "/" + name
		w.refs.rollouts[uid] = refRollout{deployment: now, obj: u}
	} else {
		delete(w.refs.rollouts, uid)
	}
	if was == now {
		return
	}
	if now != "" {
		if w.refs.byDeployment[now] == nil {
			w.refs.byDeployment[now] = map[types.UID]bool{}
			w.inventoryChanged(now)
		}
		w.refs.byDeployment[now][uid] = true
	}
	if was != "" {
		delete(w.refs.byDeployment[was], uid)
		if len(w.refs.byDeployment[was]) == 0 {
			delete(w.refs.byDeployment, was)
			w.inventoryChanged(was)
			w.release(was)
		}
	}
}

// inventoryChanged wakes sendInventories when Deployment key, which a
// tracked Rollout now references or no longer does, is tracked: the
// inventory leaves it out or lists it again, and the server should not
// wait for the next resync (up to 15 minutes) to stop or start counting
// it. watcher.serial is held.
func (w *watcher) inventoryChanged(key string) {
	if w.tracked == nil {
		return
	}
	if _, exists, err := w.tracked.GetByKey(key); err != nil || !exists {
		return
	}
	select {
	case w.refsChanged <- struct{}{}:
	default:
	}
}

// trackDeployment forgets a withheld Deployment that is gone; watcher.serial
// is held.
func (w *watcher) trackDeployment(obj any, gone bool) {
	if d, ok := obj.(*appsv1.Deployment); ok && gone {
		delete(w.refs.withheld, d.Namespace+"/"+d.Name)
	}
}

// withhold says why tracked Deployment d is not reported while a tracked
// Rollout references it, and says it in the log once; nil when none
// does. watcher.serial is held.
func (w *watcher) withhold(d *appsv1.Deployment) *Skip {
	key := d.Namespace + "/" + d.Name
	by := w.refs.byDeployment[key]
	if len(by) == 0 {
		return nil
	}
	var names []string
	for uid := range by {
		names = append(names, w.refs.rollouts[uid].obj.GetNamespace()+"/"+w.refs.rollouts[uid].obj.GetName())
	}
	slices.Sort(names)
	why := fmt.Sprintf("Deployment %s is not reported as a workload of its own: tracked Rollout %s references it (spec.workloadRef) "+
		"and runs its template, and Argo keeps it scaled to 0; it is reported again once no tracked Rollout references it",
		key, names[0])
	if _, said := w.refs.withheld[key]; !said {
		w.log.Info(why, "workload", key, "rollout", names[0])
	}
	w.refs.withheld[key] = d
	return skipf(SkipReferenced, "%s", why)
}

// release reports the withheld Deployment key, now that no tracked Rollout
// references it; watcher.serial is held.
func (w *watcher) release(key string) {
	d, ok := w.refs.withheld[key]
	if !ok {
		return
	}
	delete(w.refs.withheld, key)
	w.log.Info("Deployment "+key+" is reported again: no tracked Rollout references it any longer", "workload", key)
	w.observe(w.deploymentFact, d, true)
}
