package ghclient

import (
	"context"
	"time"
)

// Clock is the time the middlewares wait on. Tests pass a fake one so that a
// Retry-After of a minute or a full pacing window takes no real time.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or until ctx is done, in which case it returns
	// ctx.Err().
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits for d or for ctx.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// instant is a Clock whose Sleep takes no real time (StepClock): a wait
// on it never outlasts a caller's deadline, which is real time, so Pace
// waits on it instead of telling the caller to come back (a job would
// then snooze in real time for a minute of the clock's).
type instant interface{ sleepsInstantly() }

func clockOr(c Clock) Clock {
	if c == nil {
		return RealClock{}
	}
	return c
}
