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
	local := t.In(loc)
	for back := 1; back >= 0; back-- {
		day := time.Date(local.Year(), local.Month(), local.Day()-back, 0, 0, 0, 0, loc)
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

// occurrence is the window that starts on day. time.Date normalises the
// minutes, so 24:00 is the next midnight and a DST change moves the
// instants the way wall clocks do.
func occurrence(w rollout.Weekly, day time.Time, loc *time.Location) (start, end time.Time) {
	y, m, d := day.Date()
	start = time.Date(y, m, d, 0, int(w.From), 0, 0, loc)
	endDay := d
	if w.To <= w.From {
		endDay++ // crosses midnight
	}
	end = time.Date(y, m, endDay, 0, int(w.To), 0, 0, loc)
	return start, end
}
