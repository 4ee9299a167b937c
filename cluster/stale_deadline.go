package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"regexp"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// deadlineSeen is a ProgressDeadlineExceeded condition as the watch first
// saw it in a status that described the Deployment's spec (observed
// generation = generation): when it was last updated, and a hash of the
// pod template the Deployment had then. foreign: the condition names a
// ReplicaSet whose pod template is not that one (aboutAnotherTemplate).
type deadlineSeen struct {
	at       metav1.Time
	template uint64
	foreign  bool
}

// staleDeadlines remembers, per Deployment, the progress deadline its
// controller reported as exceeded, to tell when that condition outlives
// its revision. A rollback to an earlier revision reuses that revision's
// ReplicaSet, and the controller keeps the failed revision's
// ProgressDeadlineExceeded condition, unchanged, in the statuses of the
// new generation until it sees progress: sent as Degraded, it would fail
// the rollback release on its first fact. The rule is the rollback's
// (rolloutState): the condition, with the same lastUpdateTime, once the
// pod template has changed says nothing about the template that runs now.
// A spec change that keeps the template (a scale) keeps it meaningful.
//
// What the agent did not see change (it started after the rollback) it
// tells from the condition itself: the controller names the ReplicaSet
// that timed out in its message, and a ReplicaSet of the Deployment whose
// pod template is not the Deployment's is not the revision that runs now
// (aboutAnotherTemplate). Where that cannot be told (another message, a
// ReplicaSet the agent cannot read), the condition counts, as before. It
// is used under watcher.serial; the ReplicaSet is read before that lock
// is taken (toRead), so a slow API server holds up no other event.
type staleDeadlines map[types.UID]deadlineSeen

// errNotRead is a replicaSetGetter's answer for a ReplicaSet that was not
// read before the watcher's lock was taken (a Deployment's fact made again
// on a Rollout's event): the condition counts, and the Deployment's next
// event reads it.
var errNotRead = errors.New("the ReplicaSet was not read before the event")

// replicaSetGetter reads one ReplicaSet from the API server.
type replicaSetGetter func(namespace, name string) (*appsv1.ReplicaSet, error)

// replicaSetTimeout bounds the one read of a ReplicaSet a newly seen
// exceeded deadline costs the watch.
const replicaSetTimeout = 10 * time.Second

// getReplicaSet is the replicaSetGetter of a client, bounded by ctx.
func getReplicaSet(ctx context.Context, cs kubernetes.Interface) replicaSetGetter {
	return func(namespace, name string) (*appsv1.ReplicaSet, error) {
		ctx, cancel := context.WithTimeout(ctx, replicaSetTimeout)
		defer cancel()
		return cs.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
}

// stale is the lastUpdateTime of d's ProgressDeadlineExceeded condition
// when that condition was reported for another pod template than d's,
// nil when there is none, it is about d's template, or that cannot be
// told; it records what it sees. get reads the ReplicaSet the condition
// names; nil reads none, and, as errNotRead, leaves the condition counting
// without recording it, to be looked at again.
func (s staleDeadlines) stale(d *appsv1.Deployment, get replicaSetGetter) *metav1.Time {
	c := deadlineExceeded(d)
	if c == nil {
		delete(s, d.UID)
		return nil
	}
	if d.Status.ObservedGeneration != d.Generation {
		if seen, ok := s[d.UID]; !ok || !seen.at.Equal(&c.LastUpdateTime) {
			// The status describes an earlier spec: whose template the
			// condition is about is not known.
			delete(s, d.UID)
		}
		return nil
	}
	current := templateHash(d)
	seen, ok := s[d.UID]
	if ok && seen.at.Equal(&c.LastUpdateTime) {
		if !seen.foreign {
			// Taken for the template d had then: stale once it changed.
			if seen.template != current {
				return seen.at.DeepCopy()
			}
			return nil
		}
		if seen.template == current {
			return seen.at.DeepCopy()
		}
		// It named another template's ReplicaSet than the one d had
		// then, and d's template changed since: look again.
	}
	foreign, known := aboutAnotherTemplate(d, c, get)
	if !known {
		return nil
	}
	seen = deadlineSeen{at: *c.LastUpdateTime.DeepCopy(), template: current, foreign: foreign}
	s[d.UID] = seen
	if seen.foreign {
		return seen.at.DeepCopy()
	}
	return nil
}

// timedOutMessage is the message of the deployment controller's
// ProgressDeadlineExceeded condition, naming the ReplicaSet that was the
// Deployment's new one when it timed out. The controller keeps the
// condition, message and all, until a later revision makes progress.
var timedOutMessage = regexp.MustCompile(`^ReplicaSet "([^"]+)" has timed out progressing\.$`)

// toRead names the ReplicaSet stale would read for d now, "" when it
// would read none: the watcher reads it before it takes its lock. It
// changes nothing in s.
func (s staleDeadlines) toRead(d *appsv1.Deployment) (namespace, name string) {
	probe := staleDeadlines{}
	if seen, ok := s[d.UID]; ok {
		probe[d.UID] = seen
	}
	probe.stale(d, func(ns, n string) (*appsv1.ReplicaSet, error) {
		namespace, name = ns, n
		return nil, errNotRead
	})
	return namespace, name
}

// aboutAnotherTemplate reports whether c, d's exceeded progress deadline,
// names a ReplicaSet of d whose pod template is not d's: the revision that
// timed out is not the one d runs now. foreign is false when that cannot
// be told: a message that names no ReplicaSet (the controller's wording
// when the Deployment had no new ReplicaSet, or another one), a ReplicaSet
// gone or unreadable. known is false when the ReplicaSet was not read
// (no get, or errNotRead): that may change at the next look.
func aboutAnotherTemplate(d *appsv1.Deployment, c *appsv1.DeploymentCondition, get replicaSetGetter) (foreign, known bool) {
	m := timedOutMessage.FindStringSubmatch(c.Message)
	if m == nil {
		return false, true
	}
	if get == nil {
		return false, false
	}
	rs, err := get(d.Namespace, m[1])
	if errors.Is(err, errNotRead) {
		return false, false
	}
	if err != nil || !metav1.IsControlledBy(rs, d) {
		// Gone (a history limit of 0 deletes it) or unreadable: the
		// condition keeps counting rather than hide a real failure.
		return false, true
	}
	return !sameTemplate(rs.Spec.Template, d.Spec.Template), true
}

// sameTemplate compares a ReplicaSet's pod template with its Deployment's
// as the deployment controller does to find the Deployment's new
// ReplicaSet: without the pod-template-hash label it adds to the former.
func sameTemplate(rs, d corev1.PodTemplateSpec) bool {
	rs, d = *rs.DeepCopy(), *d.DeepCopy()
	delete(rs.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(d.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return equality.Semantic.DeepEqual(rs, d)
}

func templateHash(d *appsv1.Deployment) uint64 {
	b, _ := json.Marshal(&d.Spec.Template)
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}
