package ghclient

import (
	"context"
	"sync"
	"time"
)

// StepClock is a Clock for tests that moves only when slept on, by the
// sleep: retry backoff and write pacing take no real time, and what the
// middlewares waited can be read off Now.
type StepClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewStepClock starts a StepClock at start.
func NewStepClock(start time.Time) *StepClock { return &StepClock{now: start} }

// Now is the clock's time.
func (c *StepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the clock on by d at once; it returns ctx.Err().
func (c *StepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// sleepsInstantly marks StepClock's sleeps as taking no real time (instant).
func (*StepClock) sleepsInstantly() {}
