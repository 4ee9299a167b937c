package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	// A freeze's timezone must read the same on every server, whatever
	// zoneinfo the host has (distroless images have none).
	_ "time/tzdata"
)

// The keys here describe how a Plan is run on GitHub rather than what it
// updates: the workflows dispatched, the approvals between waves, the freeze
// windows and the deployment protection rule (DESIGN.md "Waves").

// Defaults for the keys that say how a rollout runs.
const (
	DefaultWorkflow = "deploy.yml"
	// DefaultProbeWorkflow reads probes with from: runners: a small workflow
	// that runs the bundled action with mode: probe.
	DefaultProbeWorkflow = "ripcord-probe.yml"
	DefaultQueueTimeout  = 10 * time.Minute
	// DefaultApprovalPermission, DefaultApprovalCount and
	// DefaultApprovalExpiry are the seed's "one approval and 72 hours if the
	// rule says nothing"; write is the least role that can deploy at all.
	DefaultApprovalPermission = "write"
	DefaultApprovalCount      = 1
	DefaultApprovalExpiry     = 72 * time.Hour
	// DefaultFreezeTimezone is where a weekly window without timezone is read.
	DefaultFreezeTimezone = "UTC"
)

// ProbeFrom says who sends a probe.
type ProbeFrom string

const (
	// FromRunners: the region's runners probe the targets and post the
	// results as facts; targets are often reachable only from their region.
	FromRunners ProbeFrom = "runners"
	// FromServer: ripcord's server probes the targets itself.
	FromServer ProbeFrom = "server"
)

// Approvals is who may approve a rollout paused after a wave in
// approvals_between, how many approvals it needs and how long it waits.
type Approvals struct {
	// Permission is the least repository role that can approve: write,
	// maintain or admin.
	Permission string        `yaml:"permission"`
	Count      int           `yaml:"count"`
	Expiry     time.Duration `yaml:"expiry"`
}

// approvalPermissions are the roles approvals.permission accepts, lowest
// first; read and triage cannot deploy, so they cannot approve a deploy.
var approvalPermissions = []string{"write", "maintain", "admin"}

// WithDefaults fills what a is missing; a nil a is all defaults.
func (a *Approvals) WithDefaults() Approvals {
	var out Approvals
	if a != nil {
		out = *a
	}
	out.Permission = cmp.Or(out.Permission, DefaultApprovalPermission)
	out.Count = cmp.Or(out.Count, DefaultApprovalCount)
	out.Expiry = cmp.Or(out.Expiry, DefaultApprovalExpiry)
	return out
}

// ProtectionRule makes ripcord a GitHub custom deployment protection rule
// for the environment: deployment_protection_rule events are approved or
// rejected by the freeze windows and, with Gates, by the release's gate
// verdicts.
type ProtectionRule struct {
	Enabled bool `yaml:"enabled"`
	Gates   bool `yaml:"gates"`
}

// Freeze is a window during which no stage starts in its regions: either a
// one-off window from Start to End, or a Weekly one.
type Freeze struct {
	Start  time.Time `yaml:"start"` // RFC 3339; with End
	End    time.Time `yaml:"end"`   // exclusive
	Weekly *Weekly   `yaml:"weekly"`
	// Regions the window blocks; empty blocks every region.
	Regions []string `yaml:"regions"`
	Reason  string   `yaml:"reason"`
}

// Weekly is a window that recurs on some days of the week, in a timezone.
// A window whose To is not after From crosses midnight into the next day
// (days: [fri], from: "18:00", to: "08:00" ends on Saturday morning).
type Weekly struct {
	Days     []time.Weekday `yaml:"days"` // the days the window starts on
	From     Clock          `yaml:"from"`
	To       Clock          `yaml:"to"`
	Timezone string         `yaml:"timezone"` // IANA name; default UTC
}

// Location is the window's timezone; an empty one is UTC.
func (w Weekly) Location() (*time.Location, error) {
	loc, err := time.LoadLocation(cmp.Or(w.Timezone, DefaultFreezeTimezone))
	if err != nil {
		return nil, fmt.Errorf("timezone %q: %w", w.Timezone, err)
	}
	return loc, nil
}

// Clock is a time of day in minutes after midnight, written "18:00";
// "24:00" is the end of the day.
type Clock int

// EndOfDay is the Clock of "24:00".
const EndOfDay Clock = 24 * 60

// ParseClock reads "HH:MM", 00:00 to 24:00.
func ParseClock(s string) (Clock, error) {
	h, m, ok := strings.Cut(s, ":")
	hour, minute := twoDigits(h), twoDigits(m)
	switch {
	case !ok || hour < 0 || minute < 0:
		return 0, fmt.Errorf("%q is not a time of day like \"18:00\"", s)
	case hour == 24 && minute == 0:
		return EndOfDay, nil
	case hour > 23 || minute > 59:
		return 0, fmt.Errorf("%q is not a time of day between 00:00 and 24:00", s)
	}
	return Clock(hour*60 + minute), nil
}

// twoDigits reads exactly two digits, or returns -1.
func twoDigits(s string) int {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return -1
	}
	n, _ := strconv.Atoi(s)
	return n
}

// String writes the clock back as HH:MM.
func (c Clock) String() string {
	return fmt.Sprintf("%02d:%02d", int(c)/60, int(c)%60)
}

// weekdays are the day names a weekly window accepts, in both spellings.
var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

// ParseWeekday reads "sat" or "saturday", in any case.
func ParseWeekday(s string) (time.Weekday, error) {
	if d, ok := weekdays[strings.ToLower(strings.TrimSpace(s))]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("%q is not a day; write mon, tue, wed, thu, fri, sat or sun", s)
}

// Describe names the window for messages and the status:
// `freeze "release week" (2026-12-21T00:00:00Z to 2027-01-07T00:00:00Z, regions us-1)`.
func (f Freeze) Describe() string {
	var when string
	if f.Weekly != nil {
		days := make([]string, len(f.Weekly.Days))
		for i, d := range f.Weekly.Days {
			days[i] = strings.ToLower(d.String()[:3])
		}
		when = fmt.Sprintf("weekly %s %s-%s %s", strings.Join(days, ","), f.Weekly.From, f.Weekly.To,
			cmp.Or(f.Weekly.Timezone, DefaultFreezeTimezone))
	} else {
		when = f.Start.Format(time.RFC3339) + " to " + f.End.Format(time.RFC3339)
	}
	where := "all regions"
	if len(f.Regions) > 0 {
		where = "regions " + strings.Join(f.Regions, ", ")
	}
	if f.Reason != "" {
		return fmt.Sprintf("freeze %q (%s, %s)", f.Reason, when, where)
	}
	return fmt.Sprintf("freeze (%s, %s)", when, where)
}

// fillExecution copies into plan how it runs, with the defaults filled in.
func (s *Spec) fillExecution(plan *Plan) {
	plan.Workflow = cmp.Or(s.Workflow, DefaultWorkflow)
	plan.Prepare = s.Prepare
	plan.ProbeWorkflow = cmp.Or(s.ProbeWorkflow, DefaultProbeWorkflow)
	plan.QueueTimeout = cmp.Or(s.QueueTimeout, DefaultQueueTimeout)
	plan.Approvals = s.Approvals.WithDefaults()
	plan.Freezes = slices.Clone(s.Freezes)
	if s.ProtectionRule != nil {
		plan.ProtectionRule = *s.ProtectionRule
	}
	plan.PrometheusURL, plan.AlertmanagerURL = s.PrometheusURL, s.AlertmanagerURL
}
