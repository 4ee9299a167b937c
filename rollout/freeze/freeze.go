// Package freeze says whether a freeze window holds a stage back: the pure
// check the executor runs before each stage (seed 001, "Freeze per
// region") and the deployment protection rule runs for plain deployments.
package freeze

import (
	"slices"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

// maxChain bounds how many windows Active follows end to end, so a set of
// windows that together never lift (a weekly window on every day, all day)
// still gives an answer: the end of the last window looked at.
const maxChain = 1000

// Active returns the first freeze, in config order, that covers any of
// regions at now, and until, when the stage may really go: the end of that
// window or, when other windows that apply start before (or as) it ends,
// the end of the last of the chain. A freeze without regions covers every
// region; with no regions given (a stage whose targets carry no region
// label), only those freezes apply.
func Active(fs []rollout.Freeze, regions []string, now time.Time) (f rollout.Freeze, until time.Time, ok bool) {
	var applying []rollout.Freeze
	for _, fr := range fs {
		if Applies(fr, regions) {
			applying = append(applying, fr)
		}
	}
	for _, fr := range applying {
		if end, covered := Covers(fr, now); covered {
			f, until, ok = fr, end, true
			break
		}
	}
	if !ok {
		return rollout.Freeze{}, time.Time{}, false
	}
	for range maxChain {
		next, extended := until, false
		for _, fr := range applying {
			if end, covered := Covers(fr, until); covered && end.After(next) {
				next, extended = end, true
			}
		}
		if !extended {
			break
		}
		until = next
	}
	return f, until, true
}

// Applies reports whether f blocks any of regions.
func Applies(f rollout.Freeze, regions []string) bool {
	if len(f.Regions) == 0 {
		return true
	}
	for _, r := range regions {
		if slices.Contains(f.Regions, r) {
			return true
		}
	}
	return false
}

// Covers reports whether f holds at t and, if so, when the occurrence that
// holds it ends. Windows include their start and exclude their end.
func Covers(f rollout.Freeze, t time.Time) (end time.Time, ok bool) {
	if f.Weekly == nil {
		return f.End, !t.Before(f.Start) && t.Before(f.End)
	}
	return coversWeekly(*f.Weekly, t)
}

// coversWeekly looks at the occurrences that start on t's day and on the day
// before, since a window may cross midnight; none lasts more than a day.
func coversWeekly(w rollout.Weekly, t time.Time) (time.Time, bool) {
	loc, err := w.Location()
	if err != nil {
		// Validation refuses unknown timezones; a Weekly built in Go with a
		// bad one is read in UTC rather than never holding.
		loc = time.UTC
	}
	y, m, d := t.In(loc).Date()
	for back := 1; back >= 0; back-- {
		// The calendar day, named at noon UTC: a local midnight the clocks
		// skip would put time.Date's instant on the day before.
		day := time.Date(y, m, d-back, 12, 0, 0, 0, time.UTC)
		if !slices.Contains(w.Days, day.Weekday()) {
			continue
		}
		start, end := occurrence(w, day, loc)
		if !t.Before(start) && t.Before(end) {
			return end, true
		}
	}
	return time.Time{}, false
}

// occurrence is the window that starts on day (a calendar day), as the
// wall clocks of loc read it: where they read its start twice (clocks go
// back) from the first time, where they read its end twice until the
// second, and where they skip either, from or until the jump.
func occurrence(w rollout.Weekly, day time.Time, loc *time.Location) (start, end time.Time) {
	y, m, d := day.Date()
	start = wallClock(y, m, d, int(w.From), loc, true)
	endDay := d
	if w.To <= w.From {
		endDay++ // crosses midnight
	}
	return start, wallClock(y, m, endDay, int(w.To), loc, false)
}

// wallClock is the instant the clocks of loc read minutes after the
// midnight that begins y-m-d (1440 is the next midnight): the first or,
// unless first, the last when they read it twice, and the jump when they
// skip it (the first instant they read later). time.Date does not say which
// it picks in either case.
func wallClock(y int, m time.Month, d, minutes int, loc *time.Location, first bool) time.Time {
	wall := time.Date(y, m, d, 0, minutes, 0, 0, time.UTC)
	// The offsets on either side of a change the day may have; changes
	// are months apart, so at most one falls between them.
	_, before := wall.Add(-26 * time.Hour).In(loc).Zone()
	_, after := wall.Add(26 * time.Hour).In(loc).Zone()
	a := wall.Add(-time.Duration(before) * time.Second)
	b := wall.Add(-time.Duration(after) * time.Second)
	if b.Before(a) {
		a, b = b, a
	}
	okA, okB := reads(a, wall, loc), reads(b, wall, loc)
	switch {
	case okA && okB && first:
		return a
	case okB:
		return b
	case okA:
		return a
	}
	// Skipped: the jump is between a and b, where the offset changes.
	lo, hi := a.Unix(), b.Unix()
	_, offLo := a.In(loc).Zone()
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, off := time.Unix(mid, 0).In(loc).Zone(); off == offLo {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Unix(hi, 0).In(loc)
}

// reads reports whether the clocks of loc read wall (given in UTC) at t.
func reads(t, wall time.Time, loc *time.Location) bool {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC).Equal(wall)
}
