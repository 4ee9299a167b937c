package rollout

import (
	"cmp"
	"slices"
	"time"
)

// PlanOptions are the server's side of a plan.
type PlanOptions struct {
	// MaxParallel is the plugin's max_parallel on the server (default 16):
	// no batch updates more targets at once.
	MaxParallel int
	// RollbackEnabled says rollback is on for the environment; without it
	// on_failure may only be stop.
	RollbackEnabled bool
}

// Plan is a rollout laid out in order: stages run one after the other, each
// followed by its bake and health gate.
type Plan struct {
	Stages    []Stage
	OnFailure OnFailure // stop unless the spec says otherwise
	Health    *Health   // with defaults filled in; nil: the gate is the bake alone

	// How the plan runs on GitHub, defaults filled in.
	Workflow        string        // dispatched once per batch
	Prepare         string        // run once before the first batch; "" for none
	ProbeWorkflow   string        // dispatched on a region's runners for probes with from: runners
	QueueTimeout    time.Duration // a batch's run queued longer fails its pass
	Approvals       Approvals     // for the stages with AwaitApproval
	Freezes         []Freeze
	ProtectionRule  ProtectionRule
	PrometheusURL   string // "" leaves the server's setting
	AlertmanagerURL string // "" leaves the server's setting
}

// Stage is a group of passes run together and followed by one bake and gate.
type Stage struct {
	Name      string
	Wave      string
	Bake      time.Duration
	BatchBake *time.Duration // gate after every batch of a pass but the last
	// AwaitApproval: the wave is in approvals_between and this is its last
	// stage, so the rollout pauses here for an approval.
	AwaitApproval bool
	Passes        []Pass
}

// Pass is the work on one region (or one AZ) inside a stage. Region and AZ
// are set when every host of the pass shares them.
type Pass struct {
	Name    string
	Region  string
	AZ      string
	Hosts   []string
	Batches []Batch
}

// Batch is a set of targets taken out of service together.
type Batch struct {
	Name  string // deploy@<pass>#<index>
	Index int
	Hosts []string
	// Parallel is how many hosts the plugin updates at once: the requested
	// value capped by max_parallel and the batch size. ParallelRequested is
	// what the config asked for, shown when it was reduced.
	Parallel          int
	ParallelRequested int
}

// StageNames lists the stages in order, as `ripcord validate` prints them.
func (p *Plan) StageNames() []string {
	names := make([]string, len(p.Stages))
	for i, s := range p.Stages {
		names[i] = s.Name
	}
	return names
}

// Regions lists the regions a stage touches, for freezes per region.
func (s Stage) Regions() []string {
	var out []string
	for _, p := range s.Passes {
		if p.Region != "" && !slices.Contains(out, p.Region) {
			out = append(out, p.Region)
		}
	}
	return out
}

// NewPlan checks spec against targets and lays out its stages, passes and
// batches. On any Problem it returns no plan: a rollout runs as checked or
// not at all.
func NewPlan(spec *Spec, targets []Target, opts PlanOptions) (*Plan, []Problem) {
	if spec == nil {
		return nil, []Problem{{Path: "rollout", Message: "no rollout to plan"}}
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = DefaultMaxParallel
	}
	sels, problems := validateSpec(spec, opts)
	problems = append(problems, validateTargets(targets)...)
	members, more := assign(spec, sels, targets)
	problems = append(problems, more...)
	problems = append(problems, checkPlacement(spec, members, targets)...)
	problems = append(problems, checkFreezeRegions(spec, targets)...)
	if len(problems) > 0 {
		return nil, problems
	}
	plan := &Plan{OnFailure: cmp.Or(spec.OnFailure, Stop), Health: spec.Health.withDefaults()}
	spec.fillExecution(plan)
	for wi, w := range spec.Waves {
		ts := make([]Target, len(members[wi]))
		for i, ti := range members[wi] {
			ts[i] = targets[ti]
		}
		stages := waveStages(w, ts, spec.Regions)
		for si := range stages {
			for pi := range stages[si].Passes {
				pass := &stages[si].Passes[pi]
				pass.Batches = batches(pass.Name, pass.Hosts, spec.maxUnavailable(w), spec.parallel(w), opts.MaxParallel)
			}
		}
		stages[len(stages)-1].AwaitApproval = slices.Contains(spec.ApprovalsBetween, w.Name)
		plan.Stages = append(plan.Stages, stages...)
	}
	return plan, nil
}

// maxUnavailable is the wave's, else the rollout's, else 1.
func (s *Spec) maxUnavailable(w Wave) Quantity {
	return firstGiven(w.MaxUnavailable, s.MaxUnavailable, DefaultMaxUnavailable)
}

// parallel is the wave's, else the rollout's, else 1.
func (s *Spec) parallel(w Wave) Quantity {
	return firstGiven(w.Parallel, s.Parallel, Number(DefaultParallel))
}

func firstGiven(qs ...Quantity) Quantity {
	for _, q := range qs {
		if !q.IsZero() {
			return q
		}
	}
	return Quantity{}
}

func (h *Health) withDefaults() *Health {
	if h == nil {
		return nil
	}
	out := *h
	out.Interval = cmp.Or(out.Interval, DefaultHealthInterval)
	out.FailuresToStop = cmp.Or(out.FailuresToStop, DefaultFailuresToStop)
	out.Probes = slices.Clone(out.Probes)
	for i := range out.Probes {
		out.Probes[i].ExpectStatus = cmp.Or(out.Probes[i].ExpectStatus, DefaultExpectStatus)
		out.Probes[i].From = cmp.Or(out.Probes[i].From, FromRunners)
	}
	return &out
}

// batches cuts a pass's hosts (already in host order) into batches of
// max_unavailable; a percentage is of the pass's hosts.
func batches(pass string, hosts []string, maxUnavailable, parallel Quantity, maxParallel int) []Batch {
	size := maxUnavailable.Of(len(hosts))
	var out []Batch
	for i, start := 0, 0; start < len(hosts); i, start = i+1, start+size {
		chunk := slices.Clone(hosts[start:min(start+size, len(hosts))])
		requested := parallel.Of(len(chunk))
		out = append(out, Batch{
			Name:              StepName(StepDeploy, pass, i),
			Index:             i,
			Hosts:             chunk,
			Parallel:          min(requested, maxParallel, len(chunk)),
			ParallelRequested: requested,
		})
	}
	return out
}

// waveStages divides a wave's targets into stages and passes.
//
//   - by: az — regions are taken parallel_regions at a time in region
//     order; stage k of a group holds AZ k (alphabetical) of each region in
//     it, one pass <wave>/<region>/<az> each; the stage is <wave>/<az>+<az>….
//   - by: region — one stage per group of regions, <wave>/<region>+…, with
//     one pass <wave>/<region> per region.
//   - undivided — a single stage <wave>. A pass runs in one region (region
//     routing sends it to that region's runners), so a wave spanning several
//     regions gets one pass <wave>/<region> per region, all in that stage; a
//     wave within one region has one pass named like the wave (the seed's
//     canary).
func waveStages(w Wave, ts []Target, listed []string) []Stage {
	byRegion := groupBy(ts, LabelRegion)
	regions := orderRegions(listed, byRegion)
	size := max(w.ParallelRegions, DefaultParallelRegions)
	var stages []Stage
	switch w.By {
	case ByAZ:
		for group := range slices.Chunk(regions, size) {
			stages = append(stages, azStages(w.Name, group, byRegion)...)
		}
	case ByRegion:
		for group := range slices.Chunk(regions, size) {
			var passes []Pass
			for _, r := range group {
				passes = append(passes, newPass(passName(w.Name, r), byRegion[r]))
			}
			stages = append(stages, Stage{Name: stageName(w.Name, group), Passes: passes})
		}
	default:
		var passes []Pass
		for _, r := range regions {
			name := w.Name
			if len(regions) > 1 {
				name = passName(w.Name, r)
			}
			passes = append(passes, newPass(name, byRegion[r]))
		}
		stages = []Stage{{Name: w.Name, Passes: passes}}
	}
	for i := range stages {
		stages[i].Wave, stages[i].Bake = w.Name, w.Bake
		if w.BatchBake != nil {
			bb := *w.BatchBake // a copy each, so no stage can change the spec
			stages[i].BatchBake = &bb
		}
	}
	return stages
}

// azStages lays out one group of regions updated together: stage k holds
// the k-th AZ of each region; a region with fewer AZs sits the rest out.
func azStages(wave string, group []string, byRegion map[string][]Target) []Stage {
	azs := map[string][]string{}
	byAZ := map[string]map[string][]Target{}
	for _, r := range group {
		byAZ[r] = groupBy(byRegion[r], LabelAZ)
		for az := range byAZ[r] {
			azs[r] = append(azs[r], az)
		}
		slices.Sort(azs[r])
	}
	var stages []Stage
	for k := 0; ; k++ {
		var passes []Pass
		var parts []string
		for _, r := range group {
			if k < len(azs[r]) {
				az := azs[r][k]
				passes = append(passes, newPass(passName(wave, r, az), byAZ[r][az]))
				parts = append(parts, az)
			}
		}
		if len(passes) == 0 {
			return stages
		}
		stages = append(stages, Stage{Name: stageName(wave, parts), Passes: passes})
	}
}

func groupBy(ts []Target, label string) map[string][]Target {
	out := map[string][]Target{}
	for _, t := range ts {
		out[t.Labels[label]] = append(out[t.Labels[label]], t)
	}
	return out
}

// orderRegions puts the regions present in the order of `regions:`, then
// the unlisted ones alphabetically.
func orderRegions(listed []string, present map[string][]Target) []string {
	var out, rest []string
	for _, r := range listed {
		if _, ok := present[r]; ok && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for r := range present {
		if !slices.Contains(listed, r) {
			rest = append(rest, r)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// newPass holds its targets in host order, so batches are stable whatever
// order the config lists them in.
func newPass(name string, ts []Target) Pass {
	ts = slices.SortedFunc(slices.Values(ts), func(a, b Target) int { return cmp.Compare(a.Host, b.Host) })
	p := Pass{Name: name, Region: shared(ts, LabelRegion), AZ: shared(ts, LabelAZ)}
	for _, t := range ts {
		p.Hosts = append(p.Hosts, t.Host)
	}
	return p
}

// shared is the value of label common to all targets, or "".
func shared(ts []Target, label string) string {
	v := ts[0].Labels[label]
	for _, t := range ts[1:] {
		if t.Labels[label] != v {
			return ""
		}
	}
	return v
}
