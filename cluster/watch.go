package cluster

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ripcord/ripcord/records"
)

// RolloutResource is Argo Rollouts' resource, read with the dynamic client
// so ripcord does not depend on Argo's Go module.
var RolloutResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// watcher turns informer events on tracked workloads into facts. An update
// that changes nothing a fact carries is not sent; a resync (the informer
// re-delivering an unchanged object) is, because the stream is
// level-triggered: a fact lost on the way becomes a late one.
type watcher struct {
	cluster string
	now     func() time.Time
	send    func(records.Fact) error
	metrics *metrics
	log     *slog.Logger

	mu   sync.Mutex
	last map[types.UID]string // what was last sent per workload
	// held are the informers' caches, per source, for the inventory.
	held []heldStore

	// serial orders the handling of every informer event: a Rollout's
	// fact depends on the Deployment it references and the other way
	// round (workloadRefs), and one re-read on the other's event must
	// never be overtaken by an older object of the same workload. It
	// guards refs and refCache.
	serial sync.Mutex
	refs   workloadRefs
	// deadlines tells a progress deadline exceeded by a revision the
	// Deployment no longer runs (staleDeadlines); replicaSets reads the
	// ReplicaSet such a condition names, nil until the Deployment watch
	// starts, and never under serial (readReplicaSet): a slow read would
	// hold up every event and the inventory. read is what readReplicaSet
	// read for the event being handled, nil outside a Deployment's event.
	deadlines   staleDeadlines
	replicaSets replicaSetGetter
	read        replicaSetGetter
	// refCache holds the Deployments Rollouts may reference; nil until
	// the Rollout watch starts.
	refCache cache.Store
	// tracked is the cache of the tracked Deployments; nil until their
	// watch starts.
	tracked cache.Store
	// refsChanged is signalled when a tracked Deployment starts or stops
	// being referenced by a tracked Rollout, which changes the inventory
	// (inventory): sendInventories sends one soon after.
	refsChanged chan struct{}
}

// heldStore is one informer's cache of the workloads of a source.
type heldStore struct {
	source records.Source
	store  cache.Store
}

// startedWatch is an informer started on the workloads of one source; its
// cache joins the inventory (hold) only once it has synced. list is what
// its requests to the API server last said.
type startedWatch struct {
	heldStore
	synced cache.InformerSynced
	list   *listState
}

func newWatcher(cluster string, now func() time.Time, send func(records.Fact) error, m *metrics, log *slog.Logger) *watcher {
	return &watcher{cluster: cluster, now: now, send: send, metrics: m, log: log, last: map[types.UID]string{}, refs: newWorkloadRefs(),
		deadlines:   staleDeadlines{},
		refsChanged: make(chan struct{}, 1)}
}

// trackedOnly restricts list and watch to the tracked label.
func trackedOnly(o *metav1.ListOptions) { o.LabelSelector = TrackedLabel + "=true" }

// deployments starts the Deployment informer once after reports true (at
// once when after is nil); synced reports that its first list has been
// handled. The Rollout watch goes first when Rollouts are served: a
// tracked Deployment a Rollout references is not reported
// (deploymentFact), which only a listed Rollout watch can tell.
//
// Each of its requests to list or watch them is noted in list, for
// /healthz and the log to say why the agent is stuck (deploymentsTrouble),
// which client-go's informer only logs, retrying for ever.
func (w *watcher) deployments(ctx context.Context, cs kubernetes.Interface, namespace string, resync time.Duration, after cache.InformerSynced,
	list *listState) startedWatch {
	res := cs.AppsV1().Deployments(namespace)
	lw := notedListWatch(list, trackedOnly, res.List, res.Watch)
	inf := cache.NewSharedIndexInformerWithOptions(lw, &appsv1.Deployment{}, cache.SharedIndexInformerOptions{
		ResyncPeriod: resync, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		ObjectDescription: "deployments.apps"})
	w.serial.Lock()
	w.tracked = inf.GetStore()
	w.replicaSets = getReplicaSet(ctx, cs)
	w.serial.Unlock()
	w.countRestarts(inf, "deployments")
	handled := w.handle(inf, "deployments", w.deploymentFact, w.trackDeployment)
	go func() {
		if after == nil || cache.WaitForCacheSync(ctx.Done(), after) {
			inf.RunWithContext(ctx)
		}
	}()
	return startedWatch{heldStore{records.SourceDeployment, inf.GetStore()}, handled.HasSynced, list}
}

// deploymentFact is a tracked Deployment's fact, or why there is none.
func (w *watcher) deploymentFact(obj any) (records.Fact, *Skip, string) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return records.Fact{}, skipf(SkipUnknownPhase, "not a Deployment: %T", obj), ""
	}
	name := d.Namespace + "/" + d.Name
	if skip := w.withhold(d); skip != nil {
		return records.Fact{}, skip, name
	}
	fact, skip := deploymentFact(w.cluster, d, w.now(), w.deadlines.stale(d, w.read))
	return fact, skip, name
}

// rollouts starts the Rollout informer (dynamic client) once the cache of
// the Deployments they may reference (refDeployments) has listed them.
// Each of its requests to list or watch them is noted (startedWatch.list),
// for the agent to go on without them when they fail (the RBAC forbids
// them, or the API server cannot serve them) and to say so; the informer
// lists again with client-go's backoff (up to a minute), so a permission
// granted or an error fixed later needs no restart. A
// Rollout whose pod template lives in a referenced Deployment
// (spec.workloadRef) takes that Deployment's images from that cache when
// its fact is made: Argo updates the Rollout's status when the
// Deployment's template changes, so the fact of every new phase carries
// the template's images then (WithWorkloadRef), and a new template that
// reaches the cache after that status sends the fact again.
//
// deployList is the Deployment watch's listState, where the requests of
// the cache of referenced Deployments are noted (refDeployments).
func (w *watcher) rollouts(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, namespace string, resync time.Duration,
	deployList *listState) startedWatch {
	refs := w.refDeployments(ctx, kube, namespace, deployList)
	list := newListState(deployList.patience)
	res := dyn.Resource(RolloutResource).Namespace(namespace)
	lw := notedListWatch(list, trackedOnly, func(ctx context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
		return listRollouts(ctx, res, o)
	}, res.Watch)
	inf := cache.NewSharedIndexInformerWithOptions(lw, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{
		ResyncPeriod: resync, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		ObjectDescription: RolloutResource.String()})
	w.countRestarts(inf, "rollouts")
	handled := w.handle(inf, "rollouts", w.rolloutFact, w.trackRollout)
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), refs.HasSynced) {
			inf.RunWithContext(ctx)
		}
	}()
	return startedWatch{heldStore{records.SourceRollout, inf.GetStore()}, handled.HasSynced, list}
}

// rolloutFact is a tracked Rollout's fact, or why there is none.
func (w *watcher) rolloutFact(obj any) (records.Fact, *Skip, string) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return records.Fact{}, skipf(SkipUnknownPhase, "not a Rollout: %T", obj), ""
	}
	name := u.GetNamespace() + "/" + u.GetName()
	fact, skip := RolloutFact(w.cluster, u, w.now())
	if skip != nil {
		return fact, skip, name
	}
	deployment, isRef, err := WorkloadRef(u)
	switch {
	case err != nil:
		return records.Fact{}, skipf(SkipWorkloadRef, "%v", err), name
	case isRef:
		d, err := w.referenced(u.GetNamespace(), deployment)
		if err != nil {
			return records.Fact{}, skipf(SkipWorkloadRef, "%v", err), name
		}
		fact, skip = WithWorkloadRef(fact, u, d)
	}
	return fact, skip, name
}

// hold adds a synced watch's cache to the inventory. Never before it
// synced: an inventory naming a source whose cache is still listing would
// have the server report that source's every workload deleted.
func (w *watcher) hold(sw startedWatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = append(w.held, sw.heldStore)
}

// inventory lists the uids of every workload the held watches hold now,
// and the sources they cover. A tracked Deployment that a tracked Rollout
// references is left out, as it is not reported (withhold): the server
// then reports it deleted, so the last report it had of it, from before
// the Rollout took it over (Healthy at 0 replicas, say), no longer counts
// as running its release. Once no Rollout references it, it is reported
// and listed again. withheld are the uids of those left out.
func (w *watcher) inventory() (sources []records.Source, uids []string, withheld map[string]bool) {
	w.mu.Lock()
	held := slices.Clone(w.held)
	w.mu.Unlock()
	w.serial.Lock()
	referenced := make(map[string]bool, len(w.refs.byDeployment))
	for key := range w.refs.byDeployment {
		referenced[key] = true
	}
	w.serial.Unlock()
	uids, withheld = []string{}, map[string]bool{}
	for _, h := range held {
		sources = append(sources, h.source)
		for _, obj := range h.store.List() {
			m, ok := obj.(metav1.Object)
			switch {
			case !ok:
			case h.source == records.SourceDeployment && referenced[m.GetNamespace()+"/"+m.GetName()]:
				withheld[string(m.GetUID())] = true
			default:
				uids = append(uids, string(m.GetUID()))
			}
		}
	}
	return sources, uids, withheld
}

// factOf reads one object: the fact, or why there is none, and its name.
type factOf func(obj any) (fact records.Fact, skip *Skip, name string)

// handle turns inf's events into facts. track keeps the references
// between Rollouts and Deployments up to date, before the fact is read;
// gone is true when the object was deleted (or lost its tracked label).
func (w *watcher) handle(inf cache.SharedIndexInformer, resource string, read factOf, track func(obj any, gone bool)) cache.ResourceEventHandlerRegistration {
	reg, _ := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			rs := w.readReplicaSet(obj)
			w.serial.Lock()
			defer w.serial.Unlock()
			w.read = rs
			defer func() { w.read = nil }()
			track(obj, false)
			w.observe(read, obj, true)
		},
		UpdateFunc: func(old, obj any) {
			rs := w.readReplicaSet(obj)
			w.serial.Lock()
			defer w.serial.Unlock()
			w.read = rs
			defer func() { w.read = nil }()
			resync := resourceVersion(old) == resourceVersion(obj)
			track(obj, false)
			w.observe(read, obj, resync)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				w.serial.Lock()
				defer w.serial.Unlock()
				track(obj, true)
				delete(w.deadlines, m.GetUID())
				w.mu.Lock()
				delete(w.last, m.GetUID())
				w.mu.Unlock()
				w.deleted(resource, m)
			}
		},
	})
	return reg
}

// readReplicaSet reads, without holding serial, the ReplicaSet the
// exceeded progress deadline of obj (a Deployment) names, when
// staleDeadlines needs it to tell whether that condition is about the
// template that runs; it answers for that one ReplicaSet, errNotRead for
// any other. nil when nothing needs reading.
func (w *watcher) readReplicaSet(obj any) replicaSetGetter {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil
	}
	w.serial.Lock()
	namespace, name := w.deadlines.toRead(d)
	get := w.replicaSets
	w.serial.Unlock()
	if name == "" || get == nil {
		return nil
	}
	rs, err := get(namespace, name)
	return func(ns, n string) (*appsv1.ReplicaSet, error) {
		if ns != namespace || n != name {
			return nil, errNotRead
		}
		return rs, err
	}
}

// countRestarts counts inf's watches (and lists) that ended in an error.
// It is called before inf starts.
func (w *watcher) countRestarts(inf cache.SharedIndexInformer, resource string) {
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		w.metrics.watchRestarts.WithLabelValues(resource).Inc()
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
}

// deleted reports a tracked workload that is gone (phase Deleted), so the
// server stops counting its last report as what runs. The deleted object
// is read from its metadata only: its status may be mid-update, which
// says nothing about a workload that no longer exists. A workload without
// a release id was never reported, and its deletion is not either. A
// deletion that cannot be spooled or delivered is not lost: the next
// inventory (sendInventories) leaves the workload out, and the server
// reports it deleted then.
func (w *watcher) deleted(resource string, m metav1.Object) {
	source := records.SourceDeployment
	if resource == "rollouts" {
		source = records.SourceRollout
	}
	release := m.GetAnnotations()[ReleaseIDAnnotation]
	if release == "" {
		return
	}
	f := records.Fact{Source: source, Cluster: w.cluster, Namespace: m.GetNamespace(), Name: m.GetName(),
		UID: string(m.GetUID()), Generation: max(m.GetGeneration(), 1), Phase: records.PhaseDeleted,
		ReleaseID: release, ObservedAt: w.now().UTC()}
	f.ObservedGeneration = f.Generation
	f.FactID = f.ID()
	if err := w.send(f); err != nil {
		w.log.Error("cannot spool a fact", "workload", m.GetNamespace()+"/"+m.GetName(), "phase", f.Phase, "err", err)
	}
}

func resourceVersion(obj any) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	return ""
}

// observe sends the object's fact when it says something new, or always
// when force (a first sight or a resync).
func (w *watcher) observe(read factOf, obj any, force bool) {
	fact, skip, name := read(obj)
	if skip != nil {
		w.metrics.factsSkipped.WithLabelValues(skip.Code).Inc()
		w.log.Debug("status not sent", "workload", name, "reason", skip.Reason)
		return
	}
	key := fact.FactID + "|" + fact.ReleaseID + "|" + strings.Join(fact.Images, ",")
	uid := types.UID(fact.UID)
	w.mu.Lock()
	same := w.last[uid] == key
	w.last[uid] = key
	w.mu.Unlock()
	if same && !force {
		return
	}
	if err := w.send(fact); err != nil {
		w.log.Error("cannot spool a fact", "workload", name, "phase", fact.Phase, "err", err)
		w.mu.Lock()
		delete(w.last, uid) // the next event tries again
		w.mu.Unlock()
	}
}

// notedListWatch lists and watches with lst and wat, after opts (when not
// nil) has set their options, and notes each request's result in list,
// where client-go's informer only logs a failure and retries for ever.
func notedListWatch[L runtime.Object](list *listState, opts func(*metav1.ListOptions),
	lst func(context.Context, metav1.ListOptions) (L, error),
	wat func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	set := func(o *metav1.ListOptions) {
		if opts != nil {
			opts(o)
		}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			set(&o)
			l, err := lst(ctx, o)
			list.note(err)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			set(&o)
			wi, err := wat(ctx, o)
			list.note(err)
			return wi, err
		},
	}
}
