package githubtest

import (
	"net/http"
	"strings"
	"sync"
)

// HoldFirst holds the first request on one operation ("METHOD /template",
// as for Handle) until release is called, then answers it as the handler
// in place (Handle's, or the default) would have; later requests are
// answered at once. reached is closed once the held request has arrived.
// A test lets something happen while a request of the code under test is
// in flight: another job overtaking it, say. release may be called more
// than once; the test's end calls it too, so a failed test does not hang.
func (s *Server) HoldFirst(pattern string) (reached <-chan struct{}, release func()) {
	s.t.Helper()
	method, template, _ := strings.Cut(strings.TrimSpace(pattern), " ")
	next := s.handlerFor(strings.ToUpper(method) + " " + template)
	arrived, resume := make(chan struct{}), make(chan struct{})
	var first, released sync.Once
	release = func() { released.Do(func() { close(resume) }) }
	s.t.Cleanup(release)
	s.Handle(pattern, func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		held := false
		first.Do(func() { held = true; close(arrived) })
		if held {
			<-resume
		}
		next(w, r, params)
	})
	return arrived, release
}
