package rollout

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The rules here are the seed's "plan is checked when queued (422 if not
// valid)", plus those a user would expect. Each Problem points at the key or
// value to change and says what would be right.

// specCheck collects the problems of a Spec that need no targets.
type specCheck struct {
	s        *Spec
	opts     PlanOptions
	problems []Problem
}

func (c *specCheck) add(rel, format string, args ...any) {
	c.problems = append(c.problems, c.s.problem(rel, format, args...))
}

// path is the full path of a key of the spec, e.g. rollout.waves[1].select.
func (s *Spec) path(rel string) string {
	root := s.root
	if root == "" {
		root = "rollout"
	}
	return joinPath(root, rel)
}

func (s *Spec) problem(rel, format string, args ...any) Problem {
	return s.at.problem(s.path(rel), format, args...)
}

// validateSpec checks the spec on its own and returns each wave's parsed
// selector (nil where select is missing or wrong).
func validateSpec(s *Spec, opts PlanOptions) ([]*Selector, []Problem) {
	c := &specCheck{s: s, opts: opts}
	sels := c.waves()
	c.regions()
	c.onFailure()
	c.approvals()
	c.parallel("parallel", s.Parallel)
	c.health()
	c.url("prometheus_url", s.PrometheusURL)
	c.url("alertmanager_url", s.AlertmanagerURL)
	c.execution()
	return sels, c.problems
}

func (c *specCheck) waves() []*Selector {
	if len(c.s.Waves) == 0 {
		c.add("waves", `a rollout needs at least one wave, e.g. {name: all, select: "region=eu-1"}`)
	}
	sels := make([]*Selector, len(c.s.Waves))
	first := map[string]int{}
	for i, w := range c.s.Waves {
		at := func(key string) string { return joinPath(indexPath("waves", i), key) }
		switch j, dup := first[w.Name]; {
		case w.Name == "":
			c.add(at("name"), "name is required: it names the wave's stages, passes and batches")
		case !nameSafe(w.Name):
			c.add(at("name"), "name %q cannot contain %s or spaces: they separate the parts of stage, pass and batch names", w.Name, nameBreakersList)
		case dup:
			c.add(at("name"), "wave name %q is already used by waves[%d]; wave names must be unique", w.Name, j)
		default:
			first[w.Name] = i
		}
		sels[i] = c.selector(at("select"), w.Select)
		if w.By != "" && w.By != ByAZ && w.By != ByRegion {
			c.add(at("by"), "by must be az or region, not %q", w.By)
		}
		if w.ParallelRegions < 0 {
			c.add(at("parallel_regions"), "parallel_regions must be at least 1, not %d", w.ParallelRegions)
		}
		if w.ParallelRegions > 1 && w.By == "" {
			c.add(at("parallel_regions"), "parallel_regions needs by: az or by: region; an undivided wave is already a single stage")
		}
		c.bake(at("bake"), w.Bake)
		if w.BatchBake != nil {
			c.bake(at("batch_bake"), *w.BatchBake)
		}
		c.parallel(at("parallel"), w.Parallel)
	}
	return sels
}

func (c *specCheck) selector(rel, text string) *Selector {
	if strings.TrimSpace(text) == "" {
		c.add(rel, `select is required: write the labels of the wave's targets, e.g. "region=eu-1, canary!=true"`)
		return nil
	}
	sel, err := ParseSelector(text)
	if err != nil {
		c.add(rel, "select %q: %v", text, err)
		return nil
	}
	return &sel
}

func (c *specCheck) bake(rel string, d time.Duration) {
	if d < 0 || d > MaxBake {
		c.add(rel, "%s must be between 0s and 24h, not %s", lastKey(rel), d)
	}
}

// parallel checks a requested parallel against the server's max_parallel; a
// percentage is of the batch and is capped by the plan instead.
func (c *specCheck) parallel(rel string, q Quantity) {
	if q.Value < 0 {
		c.add(rel, "parallel must be at least 1, not %d", q.Value)
	}
	if !q.Percent && q.Value > c.opts.MaxParallel {
		c.add(rel, "parallel %d is more than this server allows (max_parallel %d); ask for at most %d",
			q.Value, c.opts.MaxParallel, c.opts.MaxParallel)
	}
}

func (c *specCheck) regions() {
	first := map[string]int{}
	for i, r := range c.s.Regions {
		rel := indexPath("regions", i)
		if j, dup := first[r]; dup {
			c.add(rel, "region %q is already listed as regions[%d]; list each region once", r, j)
			continue
		}
		first[r] = i
		if !nameSafe(r) {
			c.add(rel, "region %q cannot be empty or contain %s or spaces: regions are part of stage and pass names", r, nameBreakersList)
		}
	}
}

func (c *specCheck) onFailure() {
	switch c.s.OnFailure {
	case "", Stop:
	case RollbackWave, RollbackAll:
		if !c.opts.RollbackEnabled {
			c.add("on_failure", "on_failure: %s rolls targets back, so it needs rollback enabled for this environment; enable rollback or use stop", c.s.OnFailure)
		}
	default:
		c.add("on_failure", "on_failure must be stop, rollback-wave or rollback-all, not %q", c.s.OnFailure)
	}
}

func (c *specCheck) approvals() {
	names := make([]string, len(c.s.Waves))
	for i, w := range c.s.Waves {
		names[i] = w.Name
	}
	for i, a := range c.s.ApprovalsBetween {
		switch {
		case !slices.Contains(names, a):
			c.add(indexPath("approvals_between", i), "approvals_between names %q, which is no wave; the waves are %s", a, strings.Join(names, ", "))
		case a == names[len(names)-1]:
			// The seed's approval is between waves: after the last one
			// there is nothing left to hold back, and an approval asked
			// for there would only be skipped.
			c.add(indexPath("approvals_between", i), "approvals_between names %q, the last wave: an approval holds back the waves after it, and none follows %s; name an earlier wave or remove it",
				a, a)
		}
	}
}

func (c *specCheck) health() {
	h := c.s.Health
	if h == nil {
		return
	}
	if h.Interval < 0 || (h.Interval == 0 && c.s.at.has(c.s.path("health.interval"))) {
		c.add("health.interval", "interval must be more than 0s, e.g. 30s")
	}
	if h.FailuresToStop < 0 {
		c.add("health.failures_to_stop", "failures_to_stop must be at least 1, not %d", h.FailuresToStop)
	}
	for i, p := range h.Probes {
		rel := indexPath("health.probes", i)
		if !probeURLOK(p.URL) {
			c.add(rel+".url", "url %q must start with http://{host} or https://{host}: probes reach only the stage's targets", p.URL)
		}
		if p.ExpectStatus != 0 && (p.ExpectStatus < 100 || p.ExpectStatus > 599) {
			c.add(rel+".expect_status", "expect_status must be an HTTP status between 100 and 599, not %d", p.ExpectStatus)
		}
	}
	c.metrics(h.Metrics)
	if h.Alerts != nil {
		for i, b := range h.Alerts.BlockOn {
			if _, err := ParseSelector(b); err != nil {
				c.add(indexPath("health.alerts.block_on", i), "block_on %q: %v%s", b, err, blockOnHint(b))
			}
		}
	}
}

func (c *specCheck) metrics(ms []Metric) {
	first := map[string]int{}
	for i, m := range ms {
		rel := indexPath("health.metrics", i)
		if j, dup := first[m.Name]; dup && m.Name != "" {
			c.add(rel+".name", "metric name %q is already used by metrics[%d]; gate messages name metrics, so keep them unique", m.Name, j)
		} else if m.Name == "" {
			c.add(rel+".name", "name is required: the gate names the metric that is out of bounds")
		}
		first[m.Name] = i
		if strings.TrimSpace(m.Query) == "" {
			c.add(rel+".query", "query is required: the PromQL expression the gate reads")
		}
		switch {
		case m.Max == nil && m.Min == nil:
			c.add(rel, "metric %q needs max, min or both: without a bound it can never be red", m.Name)
		case m.Max != nil && m.Min != nil && *m.Min > *m.Max:
			c.add(rel+".min", "min %g is above max %g: no value could pass", *m.Min, *m.Max)
		}
	}
}

// probeURLOK accepts only URLs whose host is the target: {host} must be the
// whole host, so "https://{host}.example.com" is refused too.
func probeURLOK(u string) bool {
	for _, prefix := range []string{"http://{host}", "https://{host}"} {
		if rest, ok := strings.CutPrefix(u, prefix); ok {
			return rest == "" || strings.ContainsRune(":/?#", rune(rest[0]))
		}
	}
	return false
}

func (c *specCheck) url(rel, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.add(rel, "%s %q must be an http(s) URL like http://prometheus:9090", rel, raw)
	}
}

// validateTargets checks hosts: each is named, and named once.
func validateTargets(ts []Target) []Problem {
	var problems []Problem
	first := map[string]int{}
	for i, t := range ts {
		if t.Host == "" {
			problems = append(problems, t.problem(i, "host", "host is required"))
			continue
		}
		if j, dup := first[t.Host]; dup {
			problems = append(problems, t.problem(i, "host", "host %q is already targets[%d]; list each host once", t.Host, j))
			continue
		}
		first[t.Host] = i
	}
	return problems
}

func (t Target) problem(i int, rel, format string, args ...any) Problem {
	path := t.path
	if path == "" {
		path = indexPath("targets", i)
	}
	return t.at.problem(joinPath(path, rel), format, args...)
}

// assign puts every target in the one wave whose selector picks it, and
// reports targets in two waves or in none and waves that pick nothing.
func assign(s *Spec, sels []*Selector, ts []Target) ([][]int, []Problem) {
	var problems []Problem
	members := make([][]int, len(sels))
	// Blaming targets for a select that could not be read would send the
	// user after the wrong fix.
	allParsed := len(sels) > 0 && !slices.Contains(sels, nil)
	for ti, t := range ts {
		var in []string
		for wi, sel := range sels {
			if sel != nil && sel.Matches(t.Labels) {
				members[wi] = append(members[wi], ti)
				in = append(in, s.Waves[wi].Name)
			}
		}
		switch {
		case len(in) > 1:
			problems = append(problems, t.problem(ti, "", "%s is selected by waves %s; a target belongs to exactly one wave: narrow a select (e.g. add \"canary!=true\")",
				t.Host, strings.Join(in, " and ")))
		case len(in) == 0 && allParsed:
			problems = append(problems, t.problem(ti, "", "%s is selected by no wave; every target belongs to exactly one wave: widen a select or add a wave", t.Host))
		}
	}
	for wi, sel := range sels {
		if sel != nil && len(members[wi]) == 0 {
			problems = append(problems, s.problem(joinPath(indexPath("waves", wi), "select"),
				"wave %s selects no target: %q matches none of the %d targets", s.Waves[wi].Name, s.Waves[wi].Select, len(ts)))
		}
	}
	return members, problems
}

// checkPlacement makes sure a wave's targets carry the labels its division
// needs: region and az with by (either one: seed 001, "con by i target
// devono avere le etichette region e az"), and region when an undivided
// wave spans several regions, since a pass runs in one region.
func checkPlacement(s *Spec, members [][]int, ts []Target) []Problem {
	var problems []Problem
	for wi, w := range s.Waves {
		need := []string{LabelRegion}
		switch {
		case w.By == ByAZ, w.By == ByRegion:
			need = append(need, LabelAZ)
		case w.By == "" && spansRegions(members[wi], ts):
		default:
			continue
		}
		for _, ti := range members[wi] {
			for _, label := range need {
				if p, bad := placementProblem(w, ts[ti], ti, label); bad {
					problems = append(problems, p)
				}
			}
		}
	}
	return problems
}

func placementProblem(w Wave, t Target, ti int, label string) (Problem, bool) {
	v, ok := t.Labels[label]
	why := fmt.Sprintf("wave %s splits by %s", w.Name, w.By)
	switch {
	case w.By == ByAZ && label == LabelRegion:
		// An az label alone looks like enough for by: az; say why it is not.
		why += ", and each AZ's pass runs in its region (passes are <wave>/<region>/<az>)"
	case w.By == ByRegion && label == LabelAZ:
		// A region label alone looks like enough for by: region.
		why += ", and a wave with by needs both region and az on every target"
	case w.By == "":
		why = fmt.Sprintf("wave %s spans several regions and each pass runs in one", w.Name)
	}
	switch {
	case !ok:
		return t.problem(ti, "labels", "%s has no %s label, but %s: add labels: {%s: …} or leave it out of the wave", t.Host, label, why, label), true
	case !nameSafe(v):
		return t.problem(ti, "labels."+label, "%s %q cannot be empty or contain %s or spaces: it becomes part of stage and pass names", label, v, nameBreakersList), true
	}
	return Problem{}, false
}

// spansRegions reports whether the targets carry more than one region value
// (a missing label counting as one).
func spansRegions(idx []int, ts []Target) bool {
	seen := map[string]bool{}
	for _, ti := range idx {
		seen[ts[ti].Labels[LabelRegion]] = true
	}
	return len(seen) > 1
}

// bareWord is an entry that reads as an alert's name rather than a
// condition on its labels.
var bareWord = regexp.MustCompile(`^\s*[A-Za-z_:][A-Za-z0-9_:.-]*\s*$`)

// blockOnHint says how to block on an alert by its name, for an entry that
// is a bare name: an entry is a condition on the alert's labels, and the
// name is only one of them, alertname.
func blockOnHint(entry string) string {
	if !bareWord.MatchString(entry) {
		return ""
	}
	name := strings.TrimSpace(entry)
	return fmt.Sprintf("; an entry is label conditions the alert must match: write alertname=%s for the alert of that name, or a label's value, like severity=critical", name)
}
