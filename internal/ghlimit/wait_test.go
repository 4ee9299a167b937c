package ghlimit

import (
	"testing"
	"time"
)

// A wait never runs past its alert's due time, an hour after the first
// rate-limited try, however much later GitHub names: the try at the hour
// is the one that alerts. Once alerted, the wait is GitHub's again.
func TestWaitSnoozeStopsAtTheAlert(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		w          Wait
		now, until time.Time
		want       time.Duration
		due        bool
	}{
		{"first wait, the limit lifts within the hour", Wait{}, t0, t0.Add(25 * time.Minute), 25 * time.Minute, false},
		{"first wait, GitHub names a time past the hour", Wait{}, t0, t0.Add(2 * time.Hour), time.Hour, false},
		{"50 minutes in, a reset 25 minutes on: wakes at the hour", Wait{Since: t0}, t0.Add(50 * time.Minute), t0.Add(75 * time.Minute), 10 * time.Minute, false},
		{"at the hour: the alert is due", Wait{Since: t0}, t0.Add(time.Hour), t0.Add(85 * time.Minute), 25 * time.Minute, true},
		{"past the hour, the alert's write failed: due, nothing cut", Wait{Since: t0}, t0.Add(70 * time.Minute), t0.Add(80 * time.Minute), 10 * time.Minute, true},
		{"alerted already: GitHub's time, no second alert", Wait{Since: t0, Alerted: true}, t0.Add(70 * time.Minute), t0.Add(110 * time.Minute), 40 * time.Minute, false},
		{"a second before the hour waits a second", Wait{Since: t0}, t0.Add(time.Hour - time.Millisecond), t0.Add(2 * time.Hour), time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.Snooze(tc.until, tc.now); got != tc.want {
				t.Errorf("Snooze = %s, want %s", got, tc.want)
			}
			if got := tc.w.AlertDue(tc.now); got != tc.due {
				t.Errorf("AlertDue = %v, want %v", got, tc.due)
			}
		})
	}
}
