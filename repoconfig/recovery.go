package repoconfig

import (
	"sort"
	"time"

	"gopkg.in/yaml.v3"
)

// Recovery is the effective retry policy and failure classification for an app.
type Recovery struct {
	MaxRetries     int
	InitialBackoff time.Duration
	Multiplier     float64
	MaxBackoff     time.Duration
	// FailureTypes maps a failure type (build_failure, test_failure,
	// health_check_failure, or a name of the repo's own) to job-name globs.
	FailureTypes map[string][]string
}

// RecoveryOverride is a recovery section as written: nil fields were not set,
// so an app's override changes only what it names.
type RecoveryOverride struct {
	MaxRetries     *int
	InitialBackoff *time.Duration
	Multiplier     *float64
	MaxBackoff     *time.Duration
	// FailureTypes replaces the types it names and keeps the others.
	FailureTypes map[string][]string

	// where points problems found after merging (max_backoff below
	// initial_backoff) at the section that caused them.
	where field
}

// Failure types ripcord itself gives meaning to.
const (
	FailureBuild       = "build_failure"
	FailureTest        = "test_failure"
	FailureHealthCheck = "health_check_failure"
	// FailureUnknown is what a failure is called when no glob matches; it
	// cannot be configured.
	FailureUnknown = "unknown"
)

// maxRetriesLimit is GitHub's limit on re-runs of one workflow run: more
// retries than that can never happen.
const maxRetriesLimit = 50

// apply returns r with o's settings on top.
func (r Recovery) apply(o *RecoveryOverride) Recovery {
	if o == nil {
		return r
	}
	if o.MaxRetries != nil {
		r.MaxRetries = *o.MaxRetries
	}
	if o.InitialBackoff != nil {
		r.InitialBackoff = *o.InitialBackoff
	}
	if o.Multiplier != nil {
		r.Multiplier = *o.Multiplier
	}
	if o.MaxBackoff != nil {
		r.MaxBackoff = *o.MaxBackoff
	}
	types := make(map[string][]string, len(r.FailureTypes)+len(o.FailureTypes))
	for k, v := range r.FailureTypes {
		types[k] = v
	}
	for k, v := range o.FailureTypes {
		types[k] = v
	}
	r.FailureTypes = types
	return r
}

// RecoveryFor returns the recovery policy for app: the defaults, then the
// file's recovery section, then the app's own.
func (c *Config) RecoveryFor(app string) Recovery {
	if a, ok := c.Apps[app]; ok {
		return c.Recovery.apply(a.Recovery)
	}
	return c.Recovery.apply(nil)
}

// FailureTypeOrder is the stable order in which failure types are tried when
// classifying a failure: ripcord's own types first, most harmless first (a
// run whose build and tests both failed deployed nothing), then the rest by name.
func FailureTypeOrder(types map[string][]string) []string {
	builtin := []string{FailureBuild, FailureTest, FailureHealthCheck}
	var out, rest []string
	for _, t := range builtin {
		if _, ok := types[t]; ok {
			out = append(out, t)
		}
	}
	for t := range types {
		if !contains(builtin, t) {
			rest = append(rest, t)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

var recoveryKeys = []string{"max_retries", "initial_backoff", "multiplier", "max_backoff", "failure_types"}

func (d *decoder) recovery(f field) *RecoveryOverride {
	o := &RecoveryOverride{where: f}
	m, ok := d.fields(f.Value, f.Path, recoveryKeys...)
	if !ok {
		return o
	}
	if v, ok := m["max_retries"]; ok {
		if n, ok := d.integer(v, 0, maxRetriesLimit); ok {
			o.MaxRetries = &n
		}
	}
	if v, ok := m["initial_backoff"]; ok {
		if t, ok := d.duration(v, false); ok {
			o.InitialBackoff = &t
		}
	}
	if v, ok := m["multiplier"]; ok {
		if x, ok := d.number(v, 1); ok {
			o.Multiplier = &x
		}
	}
	if v, ok := m["max_backoff"]; ok {
		if t, ok := d.duration(v, true); ok {
			o.MaxBackoff = &t
		}
	}
	if v, ok := m["failure_types"]; ok {
		o.FailureTypes = d.failureTypes(v)
	}
	return o
}

func (d *decoder) failureTypes(f field) map[string][]string {
	entries, _ := d.entries(f.Value, f.Path)
	out := make(map[string][]string, len(entries))
	for _, e := range entries {
		if e.Name == FailureUnknown {
			d.problemf(e.Key, e.Path, "%q is reserved for failures no pattern matches; pick another name", e.Name)
			continue
		}
		if !failureTypePattern.MatchString(e.Name) {
			d.problemf(e.Key, e.Path, "failure type %q must be snake_case, like build_failure", e.Name)
			continue
		}
		out[e.Name] = d.strings(e, d.glob)
	}
	return out
}

func (d *decoder) glob(f field) (string, bool) {
	s, ok := d.str(f)
	if !ok {
		return "", false
	}
	if _, err := CompileGlob(s); err != nil {
		d.problemf(f.Value, f.Path, "invalid pattern: %v", err)
		return "", false
	}
	return s, true
}

// checkRecovery reports a policy that cannot work once merged.
func (d *decoder) checkRecovery(r Recovery, o *RecoveryOverride) {
	if r.MaxBackoff < r.InitialBackoff {
		at := o.where
		if k, ok := d.keyIn(at, "max_backoff"); ok {
			at = k
		} else if k, ok := d.keyIn(at, "initial_backoff"); ok {
			at = k
		}
		d.problemf(at.Value, at.Path, "max_backoff (%s) must not be shorter than initial_backoff (%s)",
			formatDuration(r.MaxBackoff), formatDuration(r.InitialBackoff))
	}
}

// keyIn finds key in the mapping f without reporting anything.
func (d *decoder) keyIn(f field, key string) (field, bool) {
	n := resolve(f.Value)
	if n == nil || n.Kind != yaml.MappingNode {
		return field{}, false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return field{Key: n.Content[i], Value: resolve(n.Content[i+1]), Name: key, Path: join(f.Path, key)}, true
		}
	}
	return field{}, false
}
