package rollout

import (
	"path"
	"slices"
	"strings"
	"unicode"
)

// execution checks the keys that say how the rollout runs on GitHub and
// that decoding alone cannot judge.
func (c *specCheck) execution() {
	c.workflowFile("workflow", c.s.Workflow)
	c.workflowFile("prepare", c.s.Prepare)
	c.workflowFile("probe_workflow", c.s.ProbeWorkflow)
	if c.s.Health == nil {
		return
	}
	for i, p := range c.s.Health.Probes {
		switch p.From {
		case "", FromRunners, FromServer:
		default:
			c.add(indexPath("health.probes", i)+".from", "from must be runners or server, not %q", p.From)
		}
	}
}

// workflowFile accepts a workflow's file name in .github/workflows, the way
// the workflow_dispatch API names it: deploy.yml, not a path.
func (c *specCheck) workflowFile(rel, name string) {
	if name == "" {
		return
	}
	ext := path.Ext(name)
	if strings.ContainsAny(name, `/\`) || strings.ContainsFunc(name, unicode.IsSpace) || (ext != ".yml" && ext != ".yaml") || name == ext {
		c.add(rel, "%s %q must be a workflow file name in .github/workflows, like deploy.yml", rel, name)
	}
}

// checkFreezeRegions refuses a freeze that names a region no target is in:
// a typo there (us1 for us-1) would silently let every stage through the
// window it was meant to hold.
func checkFreezeRegions(s *Spec, ts []Target) []Problem {
	return freezeRegionProblems(s.Freezes, s.at, s.path("freezes"), ts)
}

// freezeRegionProblems is checkFreezeRegions for freezes read at path,
// their positions in at.
func freezeRegionProblems(fs []Freeze, at positions, path string, ts []Target) []Problem {
	var known []string
	for _, t := range ts {
		if r, ok := t.Labels[LabelRegion]; ok && !slices.Contains(known, r) {
			known = append(known, r)
		}
	}
	slices.Sort(known)
	regions := "the regions are " + strings.Join(known, ", ")
	switch {
	case len(ts) == 0:
		regions = "there are no targets"
	case len(known) == 0:
		regions = "no target has a region label"
	}
	var problems []Problem
	for i, f := range fs {
		for j, r := range f.Regions {
			if !slices.Contains(known, r) {
				problems = append(problems, at.problem(indexPath(joinPath(indexPath(path, i), "regions"), j),
					"freeze region %q is the region of no target, so the window would hold nothing; %s", r, regions))
			}
		}
	}
	return problems
}
