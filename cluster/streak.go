package cluster

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// failureStreak is what /healthz says of one kind of request the agent
// makes to the server (deliveries of facts, polls for actions): the last
// attempt's error, nil after one the server answered, since when the
// attempts have failed in a row, and how long that may last before it is
// trouble (patience: deliveryPatience; tests shorten it).
type failureStreak struct {
	mu       sync.Mutex
	err      error
	since    time.Time
	patience time.Duration
}

// note records the outcome of one attempt: nil when the server answered.
func (s *failureStreak) note(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && s.err == nil {
		s.since = time.Now()
	}
	s.err = err
}

// state is the last attempt's error, since when the attempts have failed
// in a row, and whether that is longer than the patience.
func (s *failureStreak) state() (err error, since time.Time, sustained bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		return nil, time.Time{}, false
	}
	return s.err, s.since, time.Since(s.since) >= s.patience
}

// trouble says that the attempts have failed for longer than the patience,
// what that means (effect) and why, naming where the token came from when
// the server refused it; "" while they have not failed for that long.
func (s *failureStreak) trouble(what, effect, tokenFrom string) string {
	err, since, sustained := s.state()
	if !sustained {
		return ""
	}
	msg := fmt.Sprintf("%s since %s (%s; %s): %v",
		what, since.UTC().Format(time.RFC3339), time.Since(since).Round(time.Second), effect, err)
	var se *statusError
	if errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden) {
		msg += "; the server refuses the agent's token"
		if tokenFrom != "" {
			msg += ", read from " + tokenFrom
		}
	}
	return msg
}
