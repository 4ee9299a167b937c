package e2etest

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/githubtest"
)

// Call is one request the App made, as "METHOD /route status".
func Call(r githubtest.Recorded) string { return fmt.Sprintf("%s %s %d", r.Method, r.Route, r.Status) }

// Sequence lists the App's requests in order, skipping installation tokens.
func (e *Env) Sequence() []string {
	var out []string
	for _, r := range e.GitHub.Requests() {
		if strings.HasSuffix(r.Route, "/access_tokens") {
			continue
		}
		out = append(out, Call(r))
	}
	return out
}

// CountsByOperation counts the App's requests by "METHOD /route status", sorted.
func (e *Env) CountsByOperation() string {
	n := map[string]int{}
	for _, r := range e.GitHub.Requests() {
		n[Call(r)]++
	}
	lines := make([]string, 0, len(n))
	for k, v := range n {
		lines = append(lines, fmt.Sprintf("%4d  %s", v, k))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Count is how many requests hit method and route with status (0: any).
func (e *Env) Count(method, route string, status int) int {
	c := 0
	for _, r := range e.GitHub.Requests() {
		if r.Method == method && r.Route == route && (status == 0 || r.Status == status) {
			c++
		}
	}
	return c
}

// Writes counts the App's content-creating requests, installation tokens aside.
func (e *Env) Writes() int {
	c := 0
	for _, r := range e.GitHub.Requests() {
		if r.Method != "GET" && !strings.HasSuffix(r.Route, "/access_tokens") {
			c++
		}
	}
	return c
}

// CheckRequestsAtCleanup fails t, when it ends, with every request the
// App made that GitHub's description rejects, listed together.
func (e *Env) CheckRequestsAtCleanup(t testing.TB) {
	t.Cleanup(func() {
		if bad := e.Invalid(); len(bad) > 0 {
			t.Errorf("requests GitHub would reject:\n%s", strings.Join(bad, "\n"))
		}
	})
}

// Invalid lists the requests GitHub's description rejects (githubtest also
// fails the test on each).
func (e *Env) Invalid() []string {
	var out []string
	for _, r := range e.GitHub.Requests() {
		if r.Invalid != "" {
			out = append(out, Call(r)+": "+r.Invalid)
		}
	}
	return out
}
