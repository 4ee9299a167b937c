// Package pipeline holds the types every capability shares with the server's
// delivery pipeline: the stored delivery, the handler interface and the
// commit a handler returns. Capabilities live in their own packages and
// implement EventHandler; the app package wires them in.
//
// It also holds RepoConfigs, each repository's .github/ripcord.yml as a
// capability last read it from the default branch, for readers that must
// not call GitHub (GET /api/v1/eligibility, the pages, a release check). It
// is kept in the database (the repo_configs table), not in one server's
// memory, so those readers answer the same after a restart and on every
// replica; a config that went missing or no longer loads is deleted there.
package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Delivery states.
const (
	Queued    = "queued"
	Processed = "processed"
	Failed    = "failed"
	Ignored   = "ignored"
)

// Delivery is one webhook delivery as stored.
type Delivery struct {
	ID             string     `json:"id"`
	Event          string     `json:"event"`
	Action         string     `json:"action"`
	InstallationID int64      `json:"installation_id"`
	Repository     string     `json:"repository"`
	ReceivedAt     time.Time  `json:"received_at"`
	State          string     `json:"state"`
	Attempts       int        `json:"attempts"`
	LastError      string     `json:"last_error"`
	ProcessedAt    *time.Time `json:"processed_at,omitempty"`
	Body           []byte     `json:"-"`
}

// EventHandler is how a capability acts on a delivery. Handle loads what it
// needs and decides (reads and GitHub GETs are fine; no writes of what the
// delivery decides) and returns a Commit, or nil when the delivery is not its
// business. The one write a Handle may cause is a cache of what it read: the
// repository config store keeps the last-read .github/ripcord.yml, written
// idempotently and outside the delivery's transaction, so a Handle that runs
// again writes the same row. Commits run in one
// transaction with the delivery's completion, so a crash or a redelivery never
// applies a delivery twice; effects are queued as jobs from the Commit.
type EventHandler interface {
	Handles() []string
	Handle(ctx context.Context, d Delivery) (Commit, error)
}

// ActionHandler is an EventHandler that acts on some actions of its events
// only. A delivery whose action none of its event's handlers takes is stored
// ignored at intake, with no job: GitHub sends check_suite requested and
// completed for every push, and only rerequested is anyone's business.
type ActionHandler interface {
	EventHandler
	HandlesAction(event, action string) bool
}

// Commit writes a handler's results inside the delivery's transaction.
type Commit func(ctx context.Context, tx *sql.Tx) error

// permanentError marks a failure that no retry can fix (a payload that does
// not decode, say): the delivery fails at once, with the error.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent wraps err so the pipeline does not retry it.
func Permanent(err error) error { return permanentError{err} }

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
