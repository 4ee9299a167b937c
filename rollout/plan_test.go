package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSeedExamplePlannedAsTheSeedDescribes(t *testing.T) {
	plan := mustPlan(t, seedDoc(t), PlanOptions{})

	wantStages := []string{
		"canary",
		"eu-1/eu-1a", "eu-1/eu-1b", "eu-1/eu-1c",
		"resto/eu-2a+us-1a", "resto/eu-2b+us-1b", "resto/eu-2c+us-1c",
	}
	if got := plan.StageNames(); !slices.Equal(got, wantStages) {
		t.Fatalf("stages:\n got %v\nwant %v", got, wantStages)
	}

	wantPasses := map[string][]string{
		"canary":            {"canary"},
		"eu-1/eu-1a":        {"eu-1/eu-1/eu-1a"},
		"eu-1/eu-1b":        {"eu-1/eu-1/eu-1b"},
		"eu-1/eu-1c":        {"eu-1/eu-1/eu-1c"},
		"resto/eu-2a+us-1a": {"resto/eu-2/eu-2a", "resto/us-1/us-1a"},
		"resto/eu-2b+us-1b": {"resto/eu-2/eu-2b", "resto/us-1/us-1b"},
		"resto/eu-2c+us-1c": {"resto/eu-2/eu-2c", "resto/us-1/us-1c"},
	}
	for _, s := range plan.Stages {
		if got := passNames(s); !slices.Equal(got, wantPasses[s.Name]) {
			t.Errorf("stage %s passes: got %v, want %v", s.Name, got, wantPasses[s.Name])
		}
	}

	// The status JSON's canary stage: one pass "canary" in eu-1/eu-1a.
	canary := stage(t, plan, "canary").Passes[0]
	if canary.Region != "eu-1" || canary.AZ != "eu-1a" || !slices.Equal(canary.Hosts, []string{"eu1-a-01"}) {
		t.Errorf("canary pass: got %+v", canary)
	}
	// The canary host is not in eu-1's first AZ pass (canary!=true).
	if got := stage(t, plan, "eu-1/eu-1a").Passes[0].Hosts; !slices.Equal(got, []string{"eu1-a-02", "eu1-a-03"}) {
		t.Errorf("eu-1/eu-1a hosts: got %v", got)
	}

	// 25% of a 2-host pass rounds down to 0, so 1: two batches of one host.
	pass := stage(t, plan, "eu-1/eu-1b").Passes[0]
	wantBatches := []Batch{
		{Name: "deploy@eu-1/eu-1/eu-1b#0", Index: 0, Hosts: []string{"eu1-b-01"}, Parallel: 1, ParallelRequested: 1},
		{Name: "deploy@eu-1/eu-1/eu-1b#1", Index: 1, Hosts: []string{"eu1-b-02"}, Parallel: 1, ParallelRequested: 1},
	}
	if !slices.EqualFunc(pass.Batches, wantBatches, batchEqual) {
		t.Errorf("batches of %s:\n got %+v\nwant %+v", pass.Name, pass.Batches, wantBatches)
	}
}

func batchEqual(a, b Batch) bool {
	return a.Name == b.Name && a.Index == b.Index && slices.Equal(a.Hosts, b.Hosts) &&
		a.Parallel == b.Parallel && a.ParallelRequested == b.ParallelRequested
}

func TestSeedExampleStageSettings(t *testing.T) {
	plan := mustPlan(t, seedDoc(t), PlanOptions{})
	tests := []struct {
		stage    string
		bake     time.Duration
		approval bool
	}{
		{"canary", 15 * time.Minute, true}, // approvals_between: [canary]
		{"eu-1/eu-1a", 10 * time.Minute, false},
		{"eu-1/eu-1c", 10 * time.Minute, false}, // eu-1 is not in approvals_between
		{"resto/eu-2c+us-1c", 10 * time.Minute, false},
	}
	for _, tt := range tests {
		s := stage(t, plan, tt.stage)
		if s.Bake != tt.bake || s.AwaitApproval != tt.approval {
			t.Errorf("stage %s: bake %v approval %v, want %v %v", tt.stage, s.Bake, s.AwaitApproval, tt.bake, tt.approval)
		}
	}
	if plan.OnFailure != Stop {
		t.Errorf("on_failure: got %q", plan.OnFailure)
	}
	if h := plan.Health; h == nil || h.FailuresToStop != 2 || h.Interval != 30*time.Second || h.Probes[0].ExpectStatus != 200 {
		t.Errorf("health: got %+v", plan.Health)
	}
}

const twoRegionsDoc = `targets:
  - {host: a1, labels: {region: eu-1, az: eu-1a}}
  - {host: a2, labels: {region: us-1, az: us-1a}}
`

func TestPlanDefaults(t *testing.T) {
	plan := mustPlan(t, twoRegionsDoc+`rollout:
  waves:
    - {name: all, select: "az in (eu-1a, us-1a)", by: region}
`, PlanOptions{})
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"on_failure defaults to stop", plan.OnFailure, Stop},
		{"no health means no gate but the bake", plan.Health == nil, true},
		{"max_unavailable defaults to one target", batchSizes(plan.Stages[0].Passes[0]), []int{1}},
		{"parallel defaults to one", plan.Stages[0].Passes[0].Batches[0].Parallel, 1},
		{"by: region with parallel_regions 1 is a stage per region", join(plan.StageNames()), "all/eu-1, all/us-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !equalAny(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func equalAny(a, b any) bool {
	if as, ok := a.([]int); ok {
		return slices.Equal(as, b.([]int))
	}
	return a == b
}

func TestHealthDefaultsFilledInThePlan(t *testing.T) {
	plan := mustPlan(t, twoRegionsDoc+`rollout:
  waves: [{name: all, select: "region in (eu-1, us-1)"}]
  health:
    probes: [{url: "http://{host}:8080/healthz"}]
`, PlanOptions{})
	h := plan.Health
	if h.Interval != DefaultHealthInterval || h.FailuresToStop != 1 || h.Probes[0].ExpectStatus != 200 {
		t.Errorf("health defaults: got %+v", h)
	}
}

func TestParallelRegions(t *testing.T) {
	// eu-1 has three AZs, us-1 two, ap-1 one; groups of two in region order.
	doc := `targets:
  - {host: e-a, labels: {region: eu-1, az: eu-1a}}
  - {host: e-b, labels: {region: eu-1, az: eu-1b}}
  - {host: e-c, labels: {region: eu-1, az: eu-1c}}
  - {host: u-a, labels: {region: us-1, az: us-1a}}
  - {host: u-b, labels: {region: us-1, az: us-1b}}
  - {host: p-a, labels: {region: ap-1, az: ap-1a}}
rollout:
  regions: [eu-1, us-1]
  waves:
    - {name: w, select: "region notin (xx)", by: %s, parallel_regions: %d}
`
	tests := []struct {
		name     string
		by       string
		parallel int
		want     []string
	}{
		{"one region at a time, one AZ at a time", "az", 1,
			[]string{"w/eu-1a", "w/eu-1b", "w/eu-1c", "w/us-1a", "w/us-1b", "w/ap-1a"}},
		{"stage k holds AZ k of each region in the group; a region short of AZs sits out", "az", 2,
			[]string{"w/eu-1a+us-1a", "w/eu-1b+us-1b", "w/eu-1c", "w/ap-1a"}},
		{"more parallel regions than regions is one group", "az", 5,
			[]string{"w/eu-1a+us-1a+ap-1a", "w/eu-1b+us-1b", "w/eu-1c"}},
		{"by region groups regions into stages", "region", 2,
			[]string{"w/eu-1+us-1", "w/ap-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := mustPlan(t, sprintf(doc, tt.by, tt.parallel), PlanOptions{})
			if got := plan.StageNames(); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	plan := mustPlan(t, sprintf(doc, "az", 2), PlanOptions{})
	if got := passNames(plan.Stages[0]); !slices.Equal(got, []string{"w/eu-1/eu-1a", "w/us-1/us-1a"}) {
		t.Errorf("passes of a joined stage: got %v", got)
	}
	if got := plan.Stages[0].Regions(); !slices.Equal(got, []string{"eu-1", "us-1"}) {
		t.Errorf("regions of a joined stage (for freezes): got %v", got)
	}
}

func TestRegionOrder(t *testing.T) {
	doc := `targets:
  - {host: a, labels: {region: eu-1, az: eu-1a}}
  - {host: b, labels: {region: us-1, az: us-1a}}
  - {host: c, labels: {region: ap-1, az: ap-1a}}
  - {host: d, labels: {region: eu-2, az: eu-2a}}
rollout:
  %s
  waves: [{name: w, select: "region!=none", by: region}]
`
	tests := []struct {
		name    string
		regions string
		want    []string
	}{
		{"without regions: alphabetical", "", []string{"w/ap-1", "w/eu-1", "w/eu-2", "w/us-1"}},
		{"listed regions first, in their order", "regions: [us-1, eu-2, eu-1, ap-1]", []string{"w/us-1", "w/eu-2", "w/eu-1", "w/ap-1"}},
		{"unlisted regions after the listed ones, alphabetically", "regions: [us-1]", []string{"w/us-1", "w/ap-1", "w/eu-1", "w/eu-2"}},
		{"a listed region without targets is skipped", "regions: [sa-1, eu-2]", []string{"w/eu-2", "w/ap-1", "w/eu-1", "w/us-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := mustPlan(t, sprintf(doc, tt.regions), PlanOptions{})
			if got := plan.StageNames(); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUndividedWavePasses(t *testing.T) {
	plan := mustPlan(t, `targets:
  - {host: b, labels: {region: us-1, az: us-1a}}
  - {host: a, labels: {region: eu-1, az: eu-1a}}
  - {host: c, labels: {region: eu-1, az: eu-1b}}
rollout:
  regions: [us-1]
  waves: [{name: all, select: "region in (eu-1, us-1)"}]
`, PlanOptions{})
	if got := plan.StageNames(); !slices.Equal(got, []string{"all"}) {
		t.Fatalf("an undivided wave is one stage: got %v", got)
	}
	s := plan.Stages[0]
	if got := passNames(s); !slices.Equal(got, []string{"all/us-1", "all/eu-1"}) {
		t.Errorf("one pass per region, in region order: got %v", got)
	}
	eu := s.Passes[1]
	if eu.Region != "eu-1" || eu.AZ != "" || !slices.Equal(eu.Hosts, []string{"a", "c"}) {
		t.Errorf("a pass over two AZs has no single az: got %+v", eu)
	}
	if eu.Batches[1].Name != "deploy@all/eu-1#1" {
		t.Errorf("batch name: got %q", eu.Batches[1].Name)
	}
}

func TestUndividedWaveWithoutRegionLabels(t *testing.T) {
	plan := mustPlan(t, `targets:
  - {host: web-2, labels: {tier: web}}
  - {host: web-1, labels: {tier: web}}
rollout:
  waves: [{name: all, select: "tier=web"}]
`, PlanOptions{})
	p := plan.Stages[0].Passes[0]
	if p.Name != "all" || p.Region != "" || !slices.Equal(p.Hosts, []string{"web-1", "web-2"}) {
		t.Errorf("got %+v", p)
	}
}

func TestHostOrderIsStable(t *testing.T) {
	plan := mustPlan(t, `targets:
  - {host: c, labels: {x: "1"}}
  - {host: a, labels: {x: "1"}}
  - {host: b, labels: {x: "1"}}
rollout:
  waves: [{name: w, select: "x=1", max_unavailable: 2}]
`, PlanOptions{})
	b := plan.Stages[0].Passes[0].Batches
	if !slices.Equal(b[0].Hosts, []string{"a", "b"}) || !slices.Equal(b[1].Hosts, []string{"c"}) {
		t.Errorf("batches must follow host order: got %+v", b)
	}
}

func TestApprovalComesAfterTheLastStageOfAWave(t *testing.T) {
	doc := strings.Replace(seedDoc(t), "approvals_between: [canary]", "approvals_between: [eu-1]", 1)
	plan := mustPlan(t, doc, PlanOptions{})
	var awaiting []string
	for _, s := range plan.Stages {
		if s.AwaitApproval {
			awaiting = append(awaiting, s.Name)
		}
	}
	if !slices.Equal(awaiting, []string{"eu-1/eu-1c"}) {
		t.Errorf("got %v, want only the last stage of eu-1", awaiting)
	}
}
