package attest

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// How long a report answers for its key: one that found everything the
// gates look for, and one that found something absent.
const (
	CompleteFor   = 15 * time.Minute
	IncompleteFor = time.Minute
)

// cache keeps reports by (digest, policy hash), least recently used out
// first, and lets concurrent callers of one key share one verification.
// Only reports without error are kept: a registry that was down must be
// asked again. A report is kept for a while only: signatures and
// attestations are added to a digest after it is pushed (a scan tomorrow,
// a signature after the PR opened), and an answer that something is absent
// goes stale soonest.
type cache struct {
	mu       sync.Mutex
	max      int
	order    *list.List // front: most recently used; values are *entry
	entries  map[string]*list.Element
	inflight map[string]*call
	now      func() time.Time
}

type entry struct {
	key    string
	report Report
	until  time.Time
}

type call struct {
	done   chan struct{}
	report Report
	err    error
}

func newCache(max int) *cache {
	return &cache{max: max, order: list.New(), entries: map[string]*list.Element{}, inflight: map[string]*call{}, now: time.Now}
}

// sharedFor bounds a verification: it runs on a context of its own, not
// on that of the caller that started it, so that this caller giving up (its
// job cancelled, timed out or superseded) does not fail every other caller
// waiting for the same digest with its "context canceled".
const sharedFor = 5 * time.Minute

func (c *cache) do(ctx context.Context, key string, verify func(context.Context) (Report, error)) (Report, error) {
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*entry)
		if c.now().Before(e.until) {
			c.order.MoveToFront(el)
			c.mu.Unlock()
			return e.report, nil
		}
		c.order.Remove(el)
		delete(c.entries, key)
	}
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return Report{}, fmt.Errorf("verify %s: %w", key, err)
	}
	cl, ok := c.inflight[key]
	if !ok {
		cl = &call{done: make(chan struct{})}
		c.inflight[key] = cl
		go c.run(ctx, key, cl, verify)
	}
	c.mu.Unlock()
	select {
	case <-cl.done:
		return cl.report, cl.err
	case <-ctx.Done():
		return Report{}, fmt.Errorf("waiting for the verification of %s: %w", key, ctx.Err())
	}
}

// run verifies for every caller of key, and keeps an answer without error.
func (c *cache) run(ctx context.Context, key string, cl *call, verify func(context.Context) (Report, error)) {
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedFor)
	defer cancel()
	cl.report, cl.err = verify(vctx)
	c.mu.Lock()
	delete(c.inflight, key)
	if cl.err == nil {
		c.putLocked(key, cl.report)
	}
	c.mu.Unlock()
	close(cl.done)
}

func (c *cache) putLocked(key string, r Report) {
	keep := IncompleteFor
	if r.complete() {
		keep = CompleteFor
	}
	c.entries[key] = c.order.PushFront(&entry{key: key, report: r, until: c.now().Add(keep)})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*entry).key)
	}
}

// len is the number of reports kept.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// complete reports whether r found the digest signed and attested.
func (r Report) complete() bool {
	return !r.Missing && r.Signed != "" && len(r.Statements) > 0
}
