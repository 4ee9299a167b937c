package githubtest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

// HandlerFunc answers one GitHub operation; params are the path parameters by the names
// in GitHub's template (owner, repo, run_id, ...), already unescaped.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, params map[string]string)

// Recorded is one request the fake received.
type Recorded struct {
	Method      string
	Path        string // escaped, without an /api/v3 prefix
	Route       string // GitHub's path template; empty when the path is not GitHub's
	OperationID string
	Params      map[string]string
	Query       url.Values
	Header      http.Header // e.g. Authorization: the App JWT or installation token used
	Body        []byte
	Status      int    // what the fake answered; 0 while its handler is still answering
	Invalid     string // why GitHub's description rejects the request; empty when valid
}

// Server is a fake api.github.com on loopback. Every request is checked against GitHub's
// OpenAPI description: one GitHub would reject fails the test (t.Errorf, naming the
// operation and the field) and gets a 422. Requests are recorded; operations answer from
// handlers the test registers or from the built-in, stateful defaults.
type Server struct {
	t    testing.TB
	spec *Spec
	http *httptest.Server

	mu       sync.Mutex
	handlers map[string]HandlerFunc // "METHOD /template"
	defaults map[string]HandlerFunc
	requests []Recorded
	clock    func() time.Time
	nextID   int64
	repos    map[string]*repoState
	tokens   []Token
	codes    map[string]bool // app-manifest codes already converted

	// installed are InstallationID's repositories (InstallRepository).
	installed []*repoState
}

// NewServer starts a fake GitHub for the test and stops it when the test ends. The first
// call in a test binary loads GitHub's description (about a second); later calls
// are cheap.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		t:        t,
		spec:     LoadSpec(t),
		handlers: map[string]HandlerFunc{},
		clock:    time.Now,
		nextID:   1000,
		repos:    map[string]*repoState{},
		codes:    map[string]bool{},
	}
	s.defaults = s.defaultHandlers()
	for key := range s.defaults {
		method, template, _ := strings.Cut(key, " ")
		if !s.spec.HasOperation(method, template) {
			t.Fatalf("githubtest: built-in handler for %s, which GitHub's description does not have", key)
		}
	}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.http.Close)
	return s
}

// URL is the API base URL with a trailing slash (http://127.0.0.1:PORT/), for
// github.api_url or go-github's BaseURL.
func (s *Server) URL() string { return s.http.URL + "/" }

// Client is a go-github client of the server, without credentials.
func (s *Server) Client() *github.Client {
	c := github.NewClient(nil)
	c.BaseURL = &url.URL{Scheme: "http", Host: strings.TrimPrefix(s.http.URL, "http://"), Path: "/"}
	return c
}

// Spec is the description the server checks requests against.
func (s *Server) Spec() *Spec { return s.spec }

// SetClock sets what the fake takes as now (timestamps, token expiry); default time.Now.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = now
}

// Handle registers h for one operation, given as "METHOD /template" exactly as GitHub's
// description spells it, e.g. "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun".
// It replaces the built-in default for that operation. An operation GitHub does not have
// fails the test.
func (s *Server) Handle(pattern string, h HandlerFunc) {
	s.t.Helper()
	method, template, ok := strings.Cut(strings.TrimSpace(pattern), " ")
	method = strings.ToUpper(method)
	if !ok || !s.spec.HasOperation(method, template) {
		s.t.Fatalf("githubtest: Handle(%q): GitHub has no such operation", pattern)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method+" "+template] = h
}

// Default is the built-in handler of one operation ("METHOD /template", as
// for Handle), for a handler that fails some requests and passes the others
// on; nil when there is none.
func (s *Server) Default(pattern string) HandlerFunc {
	method, template, _ := strings.Cut(strings.TrimSpace(pattern), " ")
	return s.defaults[strings.ToUpper(method)+" "+template]
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// Count is how many requests hit one operation, e.g.
// Count("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs").
func (s *Server) Count(method, routeTemplate string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Method == strings.ToUpper(method) && r.Route == routeTemplate {
			n++
		}
	}
	return n
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("githubtest: read request body of %s %s: %v", r.Method, r.URL.Path, err)
		writeError(w, http.StatusBadRequest, "could not read body")
		return
	}
	rec := Recorded{
		Method: r.Method, Path: apiPath(r.URL), Query: r.URL.Query(),
		Header: r.Header.Clone(), Body: body,
	}
	rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	at := -1 // where rec is in s.requests once recorded
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if at >= 0 {
			s.requests[at].Status = rw.status
			return
		}
		rec.Status = rw.status
		s.requests = append(s.requests, rec)
	}()

	rt, params, err := s.spec.router.match(r.Method, rec.Path)
	if err != nil {
		rec.Invalid = err.Error()
		s.t.Errorf("githubtest: %s", err)
		writeError(rw, http.StatusNotFound, "Not Found")
		return
	}
	rec.Route, rec.OperationID, rec.Params = rt.template, rt.op.OperationID, params
	if err := s.spec.validateRoute(r, body, rt, params); err != nil {
		rec.Invalid = err.Error()
		s.t.Errorf("githubtest: GitHub would reject %v", err)
		writeValidationFailed(rw, err)
		return
	}
	h := s.handlerFor(rt.method + " " + rt.template)
	if h == nil {
		s.t.Errorf("githubtest: no handler for %s %s (%s); register one with Server.Handle", rt.method, rt.template, rt.op.OperationID)
		writeError(rw, http.StatusNotFound, "Not Found")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// Recorded before the handler runs: what it records (a dispatch, a
	// check run) is never seen before the request that made it.
	s.mu.Lock()
	at = len(s.requests)
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
	h(rw, r, params)
}

func (s *Server) handlerFor(key string) HandlerFunc {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.handlers[key]; ok {
		return h
	}
	return s.defaults[key]
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}
