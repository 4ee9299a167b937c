package store

import "time"

// Times are stored as integer microseconds since the Unix epoch in both
// databases: SQLite has no time type, and text timestamps of varying precision
// do not sort correctly.

// Micros converts a time for storage; the zero time is stored as 0.
func Micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// Time converts a stored value back; 0 is the zero time.
func Time(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// NullMicros stores a nil time as NULL.
func NullMicros(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// TimePtr converts a nullable stored value.
func TimePtr(us *int64) *time.Time {
	if us == nil || *us == 0 {
		return nil
	}
	t := time.UnixMicro(*us).UTC()
	return &t
}
