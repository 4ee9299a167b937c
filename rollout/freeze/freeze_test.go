package freeze

import (
	"testing"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func window(start, end string, regions ...string) rollout.Freeze {
	return rollout.Freeze{Start: at(start), End: at(end), Regions: regions, Reason: start}
}

func weekly(tz string, from, to rollout.Clock, days ...time.Weekday) rollout.Freeze {
	return rollout.Freeze{Weekly: &rollout.Weekly{Days: days, From: from, To: to, Timezone: tz}, Reason: "weekly"}
}

func hm(h, m int) rollout.Clock { return rollout.Clock(h*60 + m) }

func TestActive(t *testing.T) {
	christmas := window("2026-12-24T00:00:00Z", "2026-12-27T00:00:00Z")
	usOnly := window("2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z", "us-1")
	weekendEvenings := weekly("Europe/Rome", hm(18, 0), rollout.EndOfDay, time.Saturday, time.Sunday)
	fridayNight := weekly("UTC", hm(18, 0), hm(8, 0), time.Friday)
	wholeWeekend := weekly("UTC", 0, rollout.EndOfDay, time.Saturday, time.Sunday)
	dstNight := weekly("Europe/Rome", 0, hm(6, 0), time.Sunday)
	tests := []struct {
		name      string
		freezes   []rollout.Freeze
		regions   []string
		now       string
		wantOK    bool
		wantUntil string
		wantFirst string // Reason of the freeze reported
	}{
		{"inside a one-off window", []rollout.Freeze{christmas}, []string{"eu-1"}, "2026-12-25T10:00:00Z", true, "2026-12-27T00:00:00Z", christmas.Reason},
		{"a window holds from its start", []rollout.Freeze{christmas}, nil, "2026-12-24T00:00:00Z", true, "2026-12-27T00:00:00Z", christmas.Reason},
		{"a window has lifted at its end", []rollout.Freeze{christmas}, nil, "2026-12-27T00:00:00Z", false, "", ""},
		{"before a window", []rollout.Freeze{christmas}, nil, "2026-12-23T23:59:59Z", false, "", ""},
		{"a regional freeze holds a stage touching that region", []rollout.Freeze{usOnly}, []string{"eu-2", "us-1"}, "2026-12-01T12:00:00Z", true, "2026-12-02T00:00:00Z", usOnly.Reason},
		{"a regional freeze lets other regions go", []rollout.Freeze{usOnly}, []string{"eu-1"}, "2026-12-01T12:00:00Z", false, "", ""},
		{"a regional freeze does not hold a stage without regions", []rollout.Freeze{usOnly}, nil, "2026-12-01T12:00:00Z", false, "", ""},
		{"weekly evening read in its own timezone", []rollout.Freeze{weekendEvenings}, []string{"eu-1"}, "2026-11-28T17:30:00Z", true, "2026-11-28T23:00:00Z", "weekly"},
		{"weekly evening not yet begun in Rome", []rollout.Freeze{weekendEvenings}, nil, "2026-11-28T16:59:00Z", false, "", ""},
		{"weekly evening on a weekday", []rollout.Freeze{weekendEvenings}, nil, "2026-11-27T19:00:00Z", false, "", ""},
		{"a window crossing midnight holds the next morning", []rollout.Freeze{fridayNight}, nil, "2026-11-28T03:00:00Z", true, "2026-11-28T08:00:00Z", "weekly"},
		{"a window crossing midnight has lifted after it", []rollout.Freeze{fridayNight}, nil, "2026-11-28T09:00:00Z", false, "", ""},
		{"a window crossing midnight does not start on other days", []rollout.Freeze{fridayNight}, nil, "2026-11-26T20:00:00Z", false, "", ""},
		{"saturday and sunday all day chain into one weekend", []rollout.Freeze{wholeWeekend}, nil, "2026-11-28T10:00:00Z", true, "2026-11-30T00:00:00Z", "weekly"},
		{"a friday night chains into the weekend", []rollout.Freeze{fridayNight, wholeWeekend}, nil, "2026-11-27T20:00:00Z", true, "2026-11-30T00:00:00Z", "weekly"},
		{"adjacent and overlapping one-off windows chain", []rollout.Freeze{
			window("2026-12-01T00:00:00Z", "2026-12-01T12:00:00Z"),
			window("2026-12-01T12:00:00Z", "2026-12-01T18:00:00Z"),
			window("2026-12-01T17:00:00Z", "2026-12-01T20:00:00Z"),
		}, nil, "2026-12-01T06:00:00Z", true, "2026-12-01T20:00:00Z", "2026-12-01T00:00:00Z"},
		{"a window for another region does not extend the chain", []rollout.Freeze{
			window("2026-12-01T00:00:00Z", "2026-12-01T12:00:00Z"),
			window("2026-12-01T12:00:00Z", "2026-12-01T18:00:00Z", "us-1"),
		}, []string{"eu-1"}, "2026-12-01T06:00:00Z", true, "2026-12-01T12:00:00Z", "2026-12-01T00:00:00Z"},
		{"a gap between windows ends the chain", []rollout.Freeze{
			window("2026-12-01T00:00:00Z", "2026-12-01T12:00:00Z"),
			window("2026-12-01T12:00:01Z", "2026-12-01T18:00:00Z"),
		}, nil, "2026-12-01T06:00:00Z", true, "2026-12-01T12:00:00Z", "2026-12-01T00:00:00Z"},
		{"the first covering window in config order is reported", []rollout.Freeze{
			window("2026-12-01T06:00:00Z", "2026-12-01T08:00:00Z"),
			window("2026-12-01T00:00:00Z", "2026-12-01T12:00:00Z"),
		}, nil, "2026-12-01T07:00:00Z", true, "2026-12-01T12:00:00Z", "2026-12-01T06:00:00Z"},
		{"the night clocks go forward ends at 06:00 local", []rollout.Freeze{dstNight}, nil, "2026-03-29T01:30:00Z", true, "2026-03-29T04:00:00Z", "weekly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, until, ok := Active(tt.freezes, tt.regions, at(tt.now))
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v (freeze %+v until %s)", ok, tt.wantOK, f, until)
			}
			if !ok {
				return
			}
			if !until.Equal(at(tt.wantUntil)) {
				t.Errorf("until %s, want %s", until.UTC().Format(time.RFC3339), tt.wantUntil)
			}
			if f.Reason != tt.wantFirst {
				t.Errorf("reported freeze %q, want %q", f.Reason, tt.wantFirst)
			}
		})
	}
}

func TestActiveWindowsThatNeverLiftStillAnswer(t *testing.T) {
	always := weekly("UTC", 0, rollout.EndOfDay,
		time.Sunday, time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday)
	now := at("2026-12-01T06:00:00Z")
	_, until, ok := Active([]rollout.Freeze{always}, nil, now)
	if !ok || until.Sub(now) < 365*24*time.Hour {
		t.Errorf("ok %v until %s: a freeze on every day must hold far ahead", ok, until)
	}
}

func TestCoversAWindowCrossingMidnightInItsTimezone(t *testing.T) {
	// Friday 22:00 to 02:00 in New York is Saturday 03:00 to 07:00 UTC in
	// November: the UTC day of the instant is not the window's day.
	f := weekly("America/New_York", hm(22, 0), hm(2, 0), time.Friday)
	end, ok := Covers(f, at("2026-11-28T06:30:00Z"))
	if !ok || !end.Equal(at("2026-11-28T07:00:00Z")) {
		t.Errorf("ok %v end %s", ok, end)
	}
	if _, ok := Covers(f, at("2026-11-27T06:30:00Z")); ok {
		t.Error("Thursday night is not Friday night")
	}
}

// A weekly window is read on the wall clocks of its timezone, also on the
// days those clocks change: an hour they skip or repeat, and a midnight they
// skip (America/Havana springs forward at 00:00, so 2026-03-08 begins at
// 01:00), must neither move the window to another day nor open a gap in it.
// Where the wall clock reads a window's start twice, it holds from the first
// time; where it reads its end twice, until the second.
func TestWeeklyWindowsOnTheDaysClocksChange(t *testing.T) {
	tests := []struct {
		name      string
		freeze    rollout.Freeze
		now       string
		wantOK    bool
		wantUntil string
	}{
		{"a sunday window on the sunday whose midnight is skipped",
			weekly("America/Havana", 0, hm(2, 0), time.Sunday), "2026-03-08T05:30:00Z", true, "2026-03-08T06:00:00Z"},
		{"a whole sunday on the sunday whose midnight is skipped",
			weekly("America/Havana", 0, rollout.EndOfDay, time.Sunday), "2026-03-08T12:00:00Z", true, "2026-03-09T04:00:00Z"},
		{"a saturday evening until 24:00 holds until sunday begins, though its midnight is skipped",
			weekly("America/Havana", hm(22, 0), rollout.EndOfDay, time.Saturday), "2026-03-08T04:30:00Z", true, "2026-03-08T05:00:00Z"},
		{"a window starting in the skipped hour holds from when the clocks jump",
			weekly("Europe/Rome", hm(2, 30), hm(4, 0), time.Sunday), "2026-03-29T01:00:00Z", true, "2026-03-29T02:00:00Z"},
		{"a window starting in the skipped hour has not begun before the jump",
			weekly("Europe/Rome", hm(2, 30), hm(4, 0), time.Sunday), "2026-03-29T00:59:00Z", false, ""},
		{"a window ending in the skipped hour ends when the clocks jump",
			weekly("Europe/Rome", hm(1, 0), hm(2, 30), time.Sunday), "2026-03-29T00:59:00Z", true, "2026-03-29T01:00:00Z"},
		{"a start the clock reads twice holds from the first time",
			weekly("Europe/Rome", hm(2, 30), hm(3, 30), time.Sunday), "2026-10-25T00:45:00Z", true, "2026-10-25T02:30:00Z"},
		{"an end the clock reads twice holds until the second time",
			weekly("Europe/Rome", hm(22, 0), hm(2, 30), time.Saturday), "2026-10-25T01:15:00Z", true, "2026-10-25T01:30:00Z"},
		{"a whole sunday of 25 hours",
			weekly("Europe/Rome", 0, rollout.EndOfDay, time.Sunday), "2026-10-25T22:30:00Z", true, "2026-10-25T23:00:00Z"},
		{"a sunday night into monday crosses the week's end",
			weekly("UTC", hm(22, 0), hm(6, 0), time.Sunday), "2026-11-30T05:59:00Z", true, "2026-11-30T06:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, until, ok := Active([]rollout.Freeze{tt.freeze}, nil, at(tt.now))
			if ok != tt.wantOK || (ok && !until.Equal(at(tt.wantUntil))) {
				t.Errorf("Active at %s = %v until %s, want %v until %s", tt.now, ok, until.UTC().Format(time.RFC3339), tt.wantOK, tt.wantUntil)
			}
		})
	}
}
