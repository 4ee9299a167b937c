package ghlimit

import "time"

// AlertAfter is how long, in all, work may wait for GitHub's rate limit
// from its first rate-limited try before ripcord alerts, once: a limit
// that lifts within the hour is GitHub pacing the App; one that holds the
// work back longer needs a person (something else spends the
// installation's limit).
const AlertAfter = time.Hour

// Wait is what is known of one piece of work's waits for GitHub's rate
// limit: since when it waits (its first rate-limited try; zero when it has
// not met the limit yet), and whether it has alerted already. The caller
// keeps it where the work's state is (an audit trail, a record).
type Wait struct {
	Since   time.Time
	Alerted bool
}

// Snooze is how long the work waits for a limit that lifts at until:
// Snooze, but while the alert has not been raised, not past its due time,
// AlertAfter after Since (now, when this is the first wait). A try is
// where the alert is raised, and one that waited for a time GitHub named
// past the hour would raise it up to an hour late. A due time already
// past (the alert's write failed) cuts nothing: the next try raises it.
func (w Wait) Snooze(until, now time.Time) time.Duration {
	wait := Snooze(until, now)
	if w.Alerted {
		return wait
	}
	since := w.Since
	if since.IsZero() {
		since = now
	}
	if due := since.Add(AlertAfter); due.After(now) {
		wait = min(wait, max(due.Sub(now), time.Second))
	}
	return wait
}

// AlertDue reports whether the work, meeting the limit again at now, has
// waited AlertAfter since its first wait and not alerted yet.
func (w Wait) AlertDue(now time.Time) bool {
	return !w.Alerted && !w.Since.IsZero() && now.Sub(w.Since) >= AlertAfter
}
