package cluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseLock is the Lease lock of the agent's election, noting what the
// API server forbids it. client-go's elector only logs a failed write
// and tries again every leaseRetry for ever: an agent whose RBAC grants
// get on leases but not create or update would wait for its Lease, and
// carry out no rollback, while its own log and /healthz said nothing.
type leaseLock struct {
	resourcelock.Interface
	namespace, name string
	state           *leaseState
	log             *slog.Logger
}

func (l *leaseLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	switch {
	case apierrors.IsForbidden(err):
		l.forbidden("get", err)
	case err == nil || apierrors.IsNotFound(err):
		if msg, ended := l.state.read(raw); ended {
			l.log.Info("the Lease of the agent id is readable, or someone wrote it, since a request was forbidden: " +
				"its next write says whether that is fixed; was: " + msg)
		}
	}
	return rec, raw, err
}

func (l *leaseLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, ler)
	l.wrote("create", err)
	return err
}

func (l *leaseLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, ler)
	l.wrote("update", err)
	return err
}

// wrote notes the outcome of a write.
func (l *leaseLock) wrote(verb string, err error) {
	switch {
	case apierrors.IsForbidden(err):
		l.forbidden(verb, err)
	case verb == "create" && apierrors.IsNotFound(err):
		// The one thing a Lease's create does not find is its namespace
		// (--lease-namespace misspelt, say).
		msg := fmt.Sprintf("waiting for Lease %s/%s of the agent id: namespace %s does not exist (%v); "+
			"create it, or give --lease-namespace one that does: until then this agent carries out no cluster action (rollback)",
			l.namespace, l.name, l.namespace, err)
		if l.state.fail("create-namespace", msg) {
			l.log.Error(msg)
		}
	case err == nil:
		if msg, ended := l.state.end(); ended {
			l.log.Info("the agent may write the Lease of its id again; was: " + msg)
		}
	}
}

// forbidden makes the forbidden verb the agent's trouble, logged once
// (and again only when another verb is forbidden).
func (l *leaseLock) forbidden(verb string, err error) {
	msg := fmt.Sprintf("waiting for Lease %s/%s of the agent id: the API server forbids the agent to %s "+
		"leases.coordination.k8s.io in namespace %s; grant get, create and update on them there (%s): "+
		"until then this agent carries out no cluster action (rollback)", l.namespace, l.name, verb, l.namespace, leaseRoleHint(err))
	if l.state.fail(verb, msg) {
		l.log.Error(msg, "err", err)
	}
}

// serviceAccountUser is how the RBAC authorizer's refusal names a
// service account: User "system:serviceaccount:<namespace>:<name>".
var serviceAccountUser = regexp.MustCompile(`User "system:serviceaccount:([^:"]+):([^"]+)"`)

// leaseRoleHint names the Role that grants the Lease in the Helm chart:
// <agent service account>-lease, bound to the agent's service account,
// which the refusal names.
func leaseRoleHint(err error) string {
	if m := serviceAccountUser.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("with the Helm chart, Role %s-lease, bound to service account %s/%s", m[2], m[1], m[2])
	}
	return "with the Helm chart, Role <release>-agent-lease"
}

// leaseState is the Lease request the API server last forbade (or a
// create that found no namespace), for /healthz, until a write succeeds, or a read finds the Lease written by
// someone else since (the agent then waits for a holder that may write
// it, and its next write of its own says again whether it may).
type leaseState struct {
	mu sync.Mutex
	// verb is what failed ("" when nothing did), msg says so and what
	// to do.
	verb, msg string
	// at is the Lease as the first read after a forbidden write found it
	// (nil: not found), once seen.
	at   []byte
	seen bool
}

// fail makes verb the trouble; true when it was not already.
func (s *leaseState) fail(verb, msg string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.verb == verb {
		return false
	}
	s.verb, s.msg, s.at, s.seen = verb, msg, nil, false
	return true
}

// read notes a read of the Lease (raw nil: not found); it ends a forbidden
// read, and a forbidden write once the Lease changed since the first read
// after it. It returns what the trouble said, and whether it ended.
func (s *leaseState) read(raw []byte) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.verb == "":
		return "", false
	case s.verb != "get" && !s.seen:
		s.at, s.seen = raw, true
		return "", false
	case s.verb != "get" && bytes.Equal(s.at, raw):
		return "", false
	}
	return s.endLocked()
}

// end ends the trouble after a write succeeded.
func (s *leaseState) end() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endLocked()
}

func (s *leaseState) endLocked() (string, bool) {
	msg, was := s.msg, s.verb != ""
	s.verb, s.msg, s.at, s.seen = "", "", nil, false
	return msg, was
}

// trouble is what /healthz says of the Lease: "" when nothing is
// forbidden.
func (s *leaseState) trouble() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.msg
}
