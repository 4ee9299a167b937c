package ghclient

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Call is one kind of request that reached GitHub: its route template,
// method and status (0 when no response came back).
type Call struct {
	Route  string
	Method string
	Status int
}

// Counter counts the calls that reached GitHub, in process, so that a test
// can say how many requests a piece of work cost ("one re-run = 1 write").
// The zero value is ready; it is safe for concurrent use.
type Counter struct {
	mu    sync.Mutex
	calls map[Call]int
}

// Add counts one call.
func (c *Counter) Add(call Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[Call]int{}
	}
	c.calls[call]++
}

// Count returns how many calls had this route template, method and status.
func (c *Counter) Count(route, method string, status int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[Call{Route: route, Method: method, Status: status}]
}

// Calls returns a copy of all counts.
func (c *Counter) Calls() map[Call]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[Call]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

// Total is the number of calls that reached GitHub.
func (c *Counter) Total() int { return c.sum(func(Call) bool { return true }) }

// Writes is the number of content-creating calls (POST, PATCH, PUT, DELETE).
func (c *Counter) Writes() int { return c.sum(func(k Call) bool { return isWrite(k.Method) }) }

// NotModified is the number of 304s: reads that cost no rate limit.
func (c *Counter) NotModified() int { return c.sum(func(k Call) bool { return k.Status == 304 }) }

func (c *Counter) sum(keep func(Call) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.calls {
		if keep(k) {
			n += v
		}
	}
	return n
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = nil
}

// String lists the calls one a line, sorted, as "POST /route 201 x1".
func (c *Counter) String() string {
	calls := c.Calls()
	lines := make([]string, 0, len(calls))
	for k, v := range calls {
		lines = append(lines, fmt.Sprintf("%s %s %d x%d", k.Method, k.Route, k.Status, v))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
