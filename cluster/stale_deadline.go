package cluster

import (
	"encoding/json"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deadlineSeen is a ProgressDeadlineExceeded condition as the watch first
// saw it in a status that described the Deployment's spec (observed
// generation = generation): when it was last updated, and a hash of the
// pod template it was about.
type deadlineSeen struct {
	at       metav1.Time
	template uint64
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
// What the agent did not see before it started it cannot tell: a
// Deployment first seen with a stale condition is reported Degraded, as
// before. It is used under watcher.serial.
type staleDeadlines map[types.UID]deadlineSeen

// stale is the lastUpdateTime of d's ProgressDeadlineExceeded condition
// when that condition was reported for another pod template than d's,
// nil when there is none or it is about d's template; it records what it
// sees.
func (s staleDeadlines) stale(d *appsv1.Deployment) *metav1.Time {
	c := deadlineExceeded(d)
	if c == nil {
		delete(s, d.UID)
		return nil
	}
	seen, ok := s[d.UID]
	if ok && seen.at.Equal(&c.LastUpdateTime) {
		if d.Status.ObservedGeneration == d.Generation && seen.template != templateHash(d) {
			return seen.at.DeepCopy()
		}
		return nil
	}
	if d.Status.ObservedGeneration == d.Generation {
		s[d.UID] = deadlineSeen{at: *c.LastUpdateTime.DeepCopy(), template: templateHash(d)}
	} else {
		// The status describes an earlier spec: whose template the
		// condition is about is not known.
		delete(s, d.UID)
	}
	return nil
}

func templateHash(d *appsv1.Deployment) uint64 {
	b, _ := json.Marshal(&d.Spec.Template)
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}
