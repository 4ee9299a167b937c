package ghlimit

import (
	"fmt"
	"time"
)

// PacedError is a content-creating request the client (app/ghclient) did
// not send because keeping it under GitHub's secondary limit would hold it
// past its caller's deadline. Waiting out that deadline would only fail
// the request with it, the time spent, and tell the caller nothing of when
// to come back; GitHub was not asked and did nothing, so this is the same
// "later" as GitHub's own rate-limit answers, and Lifts reads it as one: At
// is when the write may go.
type PacedError struct {
	Method, Route string
	At            time.Time     // when the pace lets the write go
	Wait          time.Duration // how long it was from when it was held back
	Left          time.Duration // what was left of the caller's deadline then
}

func (e *PacedError) Error() string {
	return fmt.Sprintf("%s %s not sent: github's secondary limit paces it until %s (in %s), after the caller's deadline (in %s)",
		e.Method, e.Route, e.At.UTC().Format(time.RFC3339), e.Wait.Round(time.Millisecond), e.Left.Round(time.Millisecond))
}
