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

// DefaultListPatience is how long (Config.ListPatience) the Rollout
// watch's requests may fail in a row, with an error other than forbidden,
// before the agent stops waiting for them (the Deployment watch's alike):
// the Deployments are reported without them (a Deployment a Rollout
// references is then reported as its own workload), and /healthz answers
// 503 naming the error until a list succeeds. Long
// enough for an API server restart or an etcd leader change, which
// client-go's first retries (within seconds) get past; short enough that
// a broken conversion webhook of the Rollout CRD, or a failing API server
// in front of it, does not keep every Deployment unreported. A list the
// RBAC forbids needs no patience: asking again changes nothing until
// someone grants the permission.
const DefaultListPatience = 30 * time.Second

// listState is what the Rollout informer's requests to list and watch
// them last said: nil after one that succeeded, else the error, and since
// when they have failed in a row.
type listState struct {
	// patience is Config.ListPatience.
	patience time.Duration

	mu    sync.Mutex
	err   error
	since time.Time
	// changed is signalled after every failed request, and after the
	// first one that succeeds after them.
	changed chan struct{}
}

func newListState(patience time.Duration) *listState {
	return &listState{patience: patience, changed: make(chan struct{}, 1)}
}

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
// its patience. Otherwise it is nil, and wait is how long until
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
	if left := s.patience - time.Since(s.since); left > 0 {
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
// to the tracked ones).
//
// The informer's first list (ResourceVersion "0", any version) is read
// consistently, from etcd or from a cache proven up to date, never from
// whatever the API server's watch cache holds: with a Rollout CRD whose
// conversion webhook fails, the watch cache stops at the first Rollout it
// cannot convert (one created or written in another version than the one
// the agent reads) and goes on answering what it held before, without an
// error, while a consistent list fails. That answer lacks every Rollout
// created since, so it may be empty, or short: the Rollouts the cache did
// hold, without those an agent reached through another API server (one
// that reaches the webhook) or before the CRD changed reported running;
// an agent starting then would inventory the short list, and the server
// would report those deleted. A consistent list fails instead, as any
// failed list does (listState): the Deployments are released without the
// Rollouts, and /healthz names the error.
//
// A relist (the resourceVersion the informer last saw) may still be served
// from the cache, which then answers only once it holds that version: it
// cannot lack a Rollout the informer saw, which came no later. An empty
// one is confirmed all the same, by a consistent list of one Rollout at
// most, whose error is the list's; when that finds a Rollout the cache did
// not hold, the full list is read consistently.
func listRollouts(ctx context.Context, res dynamic.ResourceInterface, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if o.ResourceVersion == "0" && o.Continue == "" {
		// Limit too: the informer's pager asks for pages, which a list at
		// "0" ignores; one answer keeps its pager from paging later relists.
		o.ResourceVersion, o.ResourceVersionMatch, o.Limit = "", "", 0
	}
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
