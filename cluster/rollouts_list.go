package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// rolloutsListPatience is how long the Rollout watch's requests may fail
// in a row, with an error other than forbidden, before the agent stops
// waiting for them: the Deployments are reported without them (a
// Deployment a Rollout references is then reported as its own workload),
// and /healthz answers 503 naming the error until a list succeeds. Long
// enough for an API server restart or an etcd leader change, which
// client-go's first retries (within seconds) get past; short enough that
// a broken conversion webhook of the Rollout CRD, or a failing API server
// in front of it, does not keep every Deployment unreported. A list the
// RBAC forbids needs no patience: asking again changes nothing until
// someone grants the permission.
const rolloutsListPatience = 30 * time.Second

// listState is what the Rollout informer's requests to list and watch
// them last said: nil after one that succeeded, else the error, and since
// when they have failed in a row.
type listState struct {
	mu    sync.Mutex
	err   error
	since time.Time
	// changed is signalled after every failed request, and after the
	// first one that succeeds after them.
	changed chan struct{}
}

func newListState() *listState { return &listState{changed: make(chan struct{}, 1)} }

// note records the outcome of one request to list or watch.
func (s *listState) note(err error) {
	s.mu.Lock()
	was := s.err
	if err != nil && was == nil {
		s.since = time.Now()
	}
	s.err = err
	s.mu.Unlock()
	if err != nil || was != nil {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// failing is the error the agent no longer waits on: a request the RBAC
// forbade, at once; any other once requests have failed in a row for
// rolloutsListPatience. Otherwise it is nil, and wait is how long until
// the errors so far would make it one (0 when none failed).
func (s *listState) failing() (err error, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		return nil, 0
	}
	if apierrors.IsForbidden(s.err) {
		return s.err, 0
	}
	if left := rolloutsListPatience - time.Since(s.since); left > 0 {
		return nil, left
	}
	return s.err, 0
}

// last is the error of the last request, nil when it succeeded.
func (s *listState) last() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// listRollouts is one list of the Rollout informer (o already restricted
// to the tracked ones). An empty answer is not taken on trust when the API
// server may have served it from its watch cache (a ResourceVersion was
// given, as the informer's first list and its relists do): with a Rollout
// CRD whose conversion webhook fails, the cache answered an empty list
// without an error where a read from etcd failed, and an agent holding no
// Rollouts has the server report every running one deleted (its
// inventory). Such a list is confirmed by one from etcd (ResourceVersion
// "", Limit 1), whose error is the list's: the informer then fails to
// list as with any other error (listState), and the Deployments are
// released without the Rollouts. When etcd does hold a Rollout the cache
// did not, the full list is read from etcd.
func listRollouts(ctx context.Context, res dynamic.ResourceInterface, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	l, err := res.List(ctx, o)
	if err != nil || len(l.Items) > 0 || l.GetContinue() != "" || o.ResourceVersion == "" || o.Continue != "" {
		return l, err
	}
	quorum := metav1.ListOptions{LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector}
	one := quorum
	one.Limit = 1
	c, err := res.List(ctx, one)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the API server answered an empty list of %s from its cache, and listing them from etcd failed: %w",
			RolloutResource.Resource, err)
	case len(c.Items) == 0:
		return l, nil
	}
	return res.List(ctx, quorum)
}
