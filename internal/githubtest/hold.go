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

// Overtake runs first until its first request on the operation (as for
// HoldFirst), holds that request while newer runs, then lets it go on: the
// interleaving of two jobs in which the newer one writes while the older
// one's request is in flight. It returns the errors of both; first ending
// before it reached the operation fails the test.
func (s *Server) Overtake(pattern string, first, newer func() error) (errFirst, errNewer error) {
	s.t.Helper()
	reached, release := s.HoldFirst(pattern)
	done := make(chan error, 1)
	go func() { done <- first() }()
	select {
	case <-reached:
	case err := <-done:
		s.t.Fatalf("githubtest: Overtake: the first ended before %s: %v", pattern, err)
	}
	errNewer = newer()
	release()
	return <-done, errNewer
}
