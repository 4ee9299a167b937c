package rollout

import (
	"cmp"
	"slices"
	"time"

	"gopkg.in/yaml.v3"
)

// The keys that say how a rollout runs are checked as they are decoded:
// none of their rules needs the targets, and ParseFreezes must stand alone
// for environments that have freezes but no rollout.

// ParseFreezes reads the value of a `freezes` key; path is that key's path
// (default "freezes") and prefixes every Problem.
func ParseFreezes(n *yaml.Node, path string) ([]Freeze, []Problem) {
	d := newDecoder()
	fs := d.freezes(resolve(n), cmp.Or(path, "freezes"))
	return fs, d.problems
}

// ParseEnvironmentFreezes is ParseFreezes for an environment's own
// freezes, which also refuses a region that none of the environment's
// targets is in: such a window would never hold anything, and a typo in a
// region (eu-wset) would go unnoticed until the window failed to hold.
func ParseEnvironmentFreezes(n *yaml.Node, path string, targets Targets) ([]Freeze, []Problem) {
	d := newDecoder()
	path = cmp.Or(path, "freezes")
	fs := d.freezes(resolve(n), path)
	return fs, append(d.problems, freezeRegionProblems(fs, d.at, path, targets)...)
}

// ParseProtectionRule reads the value of a `protection_rule` key; path is
// that key's path (default "protection_rule").
func ParseProtectionRule(n *yaml.Node, path string) (*ProtectionRule, []Problem) {
	d := newDecoder()
	r := d.protectionRule(resolve(n), cmp.Or(path, "protection_rule"))
	return r, d.problems
}

func (d *decoder) approvals(v *yaml.Node, path string) *Approvals {
	a := &Approvals{}
	d.fields(v, path, "approvals", map[string]field{
		"permission": func(v *yaml.Node, p string) {
			s := d.str(v, p)
			if s != "" && !slices.Contains(approvalPermissions, s) {
				d.fail(v, p, "permission must be write, maintain or admin, not %q", s)
				return
			}
			a.Permission = s
		},
		"count":  func(v *yaml.Node, p string) { a.Count = d.atLeast(v, p, 1) },
		"expiry": func(v *yaml.Node, p string) { a.Expiry = d.positive(v, p) },
	})
	return a
}

func (d *decoder) protectionRule(v *yaml.Node, path string) *ProtectionRule {
	r := &ProtectionRule{}
	d.fields(v, path, "protection_rule", map[string]field{
		"enabled": func(v *yaml.Node, p string) { r.Enabled = d.boolean(v, p) },
		"gates":   func(v *yaml.Node, p string) { r.Gates = d.boolean(v, p) },
	})
	return r
}

func (d *decoder) freezes(v *yaml.Node, path string) []Freeze {
	var fs []Freeze
	d.list(v, path, "freezes", func(item *yaml.Node, ip string) { fs = append(fs, d.freeze(item, ip)) })
	return fs
}

func (d *decoder) freeze(v *yaml.Node, path string) Freeze {
	var f Freeze
	var start, end *yaml.Node
	d.fields(v, path, "a freeze", map[string]field{
		"start":   func(v *yaml.Node, p string) { f.Start, start = d.timestamp(v, p), v },
		"end":     func(v *yaml.Node, p string) { f.End, end = d.timestamp(v, p), v },
		"weekly":  func(v *yaml.Node, p string) { f.Weekly = d.weekly(v, p) },
		"regions": func(v *yaml.Node, p string) { f.Regions = d.strs(v, p) },
		"reason":  func(v *yaml.Node, p string) { f.Reason = d.str(v, p) },
	})
	v = resolve(v)
	if v.Kind != yaml.MappingNode {
		return f
	}
	switch {
	case f.Weekly != nil && (start != nil || end != nil):
		d.fail(v, path, "a freeze is either start and end or weekly, not both; split it into two freezes")
	case f.Weekly != nil:
	case start == nil && end == nil:
		d.fail(v, path, `a freeze needs start and end (RFC 3339) or weekly: {days: [sat, sun], from: "00:00", to: "24:00"}`)
	case start == nil:
		d.fail(v, joinPath(path, "start"), "start is required with end: the window is from start to end")
	case end == nil:
		d.fail(v, joinPath(path, "end"), "end is required with start: a freeze without an end would never lift")
	case !f.Start.IsZero() && !f.End.IsZero() && !f.End.After(f.Start):
		d.fail(end, joinPath(path, "end"), "end %s is not after start %s", f.End.Format(time.RFC3339), f.Start.Format(time.RFC3339))
	}
	return f
}

func (d *decoder) weekly(v *yaml.Node, path string) *Weekly {
	w := &Weekly{}
	var days, from, to *yaml.Node
	d.fields(v, path, "weekly", map[string]field{
		"days": func(v *yaml.Node, p string) {
			days = v
			d.list(v, p, "days", func(item *yaml.Node, ip string) {
				day, err := ParseWeekday(d.str(item, ip))
				switch {
				case err != nil:
					d.fail(item, ip, "days %v", err)
				case slices.Contains(w.Days, day):
					d.fail(item, ip, "%s is listed twice in days", item.Value)
				default:
					w.Days = append(w.Days, day)
				}
			})
		},
		"from": func(v *yaml.Node, p string) {
			if w.From, from = d.clock(v, p), v; w.From == EndOfDay {
				d.fail(v, p, `from must be before 24:00; a window starting at midnight is from: "00:00" on the next day`)
			}
		},
		"to": func(v *yaml.Node, p string) {
			// People who write to: "23:59" mean "until the day is over", not
			// "leave the last minute open".
			if w.To, to = d.clock(v, p), v; w.To == EndOfDay-1 {
				w.To = EndOfDay
			}
		},
		"timezone": func(v *yaml.Node, p string) {
			w.Timezone = d.str(v, p)
			if _, err := w.Location(); w.Timezone != "" && err != nil {
				d.fail(v, p, "timezone %q is not an IANA timezone like Europe/Rome or UTC", w.Timezone)
			}
		},
	})
	v = resolve(v)
	if v.Kind != yaml.MappingNode {
		return w
	}
	if days == nil || (days.Kind == yaml.SequenceNode && len(days.Content) == 0) {
		d.fail(cmp.Or(days, v), joinPath(path, "days"), "days is required: the days the window starts on, e.g. [sat, sun]")
	}
	for _, c := range []struct {
		key string
		n   *yaml.Node
	}{{"from", from}, {"to", to}} {
		if c.n == nil {
			d.fail(v, joinPath(path, c.key), `%s is required: a time of day like "18:00"`, c.key)
		}
	}
	if from != nil && to != nil && w.From == w.To {
		d.fail(to, joinPath(path, "to"), "to is the same as from (%s): the window would be empty; for whole days write from: \"00:00\", to: \"24:00\"", w.From)
	}
	return w
}

// timestamp reads an RFC 3339 time with its offset, so a window means the
// same instant on every server.
func (d *decoder) timestamp(v *yaml.Node, path string) time.Time {
	if v.Kind == yaml.ScalarNode {
		if t, err := time.Parse(time.RFC3339, v.Value); err == nil {
			return t
		}
	}
	d.fail(v, path, "%s must be an RFC 3339 time like 2026-12-24T18:00:00+01:00, not %s", lastKey(path), kindName(v))
	return time.Time{}
}

func (d *decoder) clock(v *yaml.Node, path string) Clock {
	if v.Kind != yaml.ScalarNode {
		d.fail(v, path, `%s must be a time of day like "18:00", not %s`, lastKey(path), kindName(v))
		return 0
	}
	c, err := ParseClock(v.Value)
	if err != nil {
		d.fail(v, path, "%s %v", lastKey(path), err)
	}
	return c
}

func (d *decoder) boolean(v *yaml.Node, path string) bool {
	var b bool
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&b) != nil {
		d.fail(v, path, "%s must be true or false, not %s", lastKey(path), kindName(v))
	}
	return b
}

// positive decodes a duration that must be more than 0s.
func (d *decoder) positive(v *yaml.Node, path string) time.Duration {
	dur := d.duration(v, path)
	if dur <= 0 && v.Kind == yaml.ScalarNode {
		if _, err := time.ParseDuration(v.Value); err == nil {
			d.fail(v, path, "%s must be more than 0s, not %s", lastKey(path), v.Value)
		}
	}
	return dur
}
