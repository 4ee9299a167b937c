package ghclient

import (
	"container/list"
	"net/http"
	"sync"
)

// cacheEntry is one cached GET response. It is never changed once stored,
// so a reader may keep it after it has been evicted.
type cacheEntry struct {
	key    string
	etag   string
	header http.Header
	body   []byte
	size   int64
}

func newCacheEntry(key, etag string, header http.Header, body []byte) *cacheEntry {
	size := int64(len(key) + len(etag) + len(body) + 128) // 128: the entry and list element themselves
	for k, vs := range header {
		for _, v := range vs {
			size += int64(len(k) + len(v))
		}
	}
	return &cacheEntry{key: key, etag: etag, header: header, body: body, size: size}
}

// lru holds entries up to a total size in bytes, dropping the least
// recently used first.
type lru struct {
	mu      sync.Mutex
	max     int64
	size    int64
	order   *list.List // front: most recently used
	entries map[string]*list.Element
}

func newLRU(maxBytes int64) *lru {
	return &lru{max: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *lru) get(key string) (*cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry), true
}

// put stores e, replacing an entry under the same key; an entry larger than
// the whole cache is not stored.
func (c *lru) put(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(e.key)
	if e.size > c.max {
		return
	}
	c.entries[e.key] = c.order.PushFront(e)
	c.size += e.size
	for c.size > c.max {
		c.removeLocked(c.order.Back().Value.(*cacheEntry).key)
	}
}

func (c *lru) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(key)
}

func (c *lru) removeLocked(key string) {
	el, ok := c.entries[key]
	if !ok {
		return
	}
	c.order.Remove(el)
	delete(c.entries, key)
	c.size -= el.Value.(*cacheEntry).size
}

// stats returns the number of entries and their total size.
func (c *lru) stats() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.size
}
