package rollbackpr

import (
	"container/list"
	"strings"
	"sync"
	"time"
)

// MemoryCache is a BaseCache in memory, bounded in the branches it keeps (the least
// recently used go first) and in how long it trusts a branch nobody confirmed: with
// several replicas each keeps its own cache and sees only the pushes it handles, so
// MaxAge bounds how long a replica may base rollbacks on a head that moved elsewhere.
// A branch is confirmed by a read from GitHub (Put) or by a push that continues it.
type MemoryCache struct {
	mu       sync.Mutex
	max      int
	maxAge   time.Duration
	now      func() time.Time
	lru      *list.List // of cacheKey, most recently used first
	branches map[cacheKey]*cacheEntry
}

// maxFilesPerBranch bounds one branch's files; a rollback reads one file per
// environment, so this is far above what a base branch needs.
const maxFilesPerBranch = 32

type cacheKey struct{ repo, branch string }

type cacheEntry struct {
	elem      *list.Element
	state     branchState
	confirmed time.Time
}

// NewMemoryCache keeps at most maxBranches branches, each trusted for maxAge after it
// was last confirmed; now is the clock.
func NewMemoryCache(maxBranches int, maxAge time.Duration, now func() time.Time) *MemoryCache {
	return &MemoryCache{max: max(maxBranches, 1), maxAge: maxAge, now: now, lru: list.New(), branches: map[cacheKey]*cacheEntry{}}
}

// keyOf folds the repository's case: GitHub names are case-insensitive, and the
// config's repository and a webhook's full_name may spell one differently.
func keyOf(repo, branch string) cacheKey { return cacheKey{strings.ToLower(repo), branch} }

// Get implements BaseCache.
func (c *MemoryCache) Get(repo, branch, path string) (Snapshot, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.branches[keyOf(repo, branch)]
	if !ok || c.now().Sub(e.confirmed) > c.maxAge {
		return Snapshot{}, false
	}
	f, ok := e.state.files[path]
	if !ok {
		return Snapshot{}, false
	}
	c.lru.MoveToFront(e.elem)
	return Snapshot{Commit: e.state.commit, Tree: e.state.tree, Content: append([]byte(nil), f.content...), BlobSHA: f.blobSHA}, true
}

// Put implements BaseCache. A snapshot of another head than the one known replaces the
// branch: the other files were read at the old head.
func (c *MemoryCache) Put(repo, branch, path string, s Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := keyOf(repo, branch)
	e, ok := c.branches[k]
	if !ok {
		e = &cacheEntry{elem: c.lru.PushFront(k)}
		c.branches[k] = e
		c.evict()
	}
	if e.state.commit != s.Commit || e.state.tree != s.Tree || len(e.state.files) >= maxFilesPerBranch {
		e.state = branchState{commit: s.Commit, tree: s.Tree, files: map[string]fileState{}}
	}
	e.state.files[path] = fileState{content: append([]byte(nil), s.Content...), blobSHA: s.BlobSHA}
	e.confirmed = c.now()
	c.lru.MoveToFront(e.elem)
}

// Forget implements BaseCache.
func (c *MemoryCache) Forget(repo, branch string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(keyOf(repo, branch))
}

// Pushed implements BaseCache. A push to a branch the cache does not hold is ignored:
// the cache learns a branch only from a read.
func (c *MemoryCache) Pushed(p Push) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := keyOf(p.Repo, p.Branch)
	e, ok := c.branches[k]
	if !ok {
		return
	}
	next, ok := afterPush(e.state, p)
	if !ok {
		c.drop(k)
		return
	}
	if next.commit != e.state.commit {
		e.confirmed = c.now()
	}
	e.state = next
}

func (c *MemoryCache) drop(k cacheKey) {
	if e, ok := c.branches[k]; ok {
		c.lru.Remove(e.elem)
		delete(c.branches, k)
	}
}

func (c *MemoryCache) evict() {
	for c.lru.Len() > c.max {
		c.drop(c.lru.Back().Value.(cacheKey))
	}
}

var _ BaseCache = (*MemoryCache)(nil)
