// Package rollout is where a release's rollout in waves is described and
// planned (seed 001): the per-environment `targets` and `rollout` keys, the
// label selectors that pick a wave's targets, and the pure function that turns
// them into stages, passes and batches with the names users see. It does no
// I/O and knows no clock; the executor that runs a Plan lives elsewhere.
package rollout

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults, in one place. A zero value in a Spec means "not given" and takes
// the default when the plan is made.
const (
	DefaultMaxParallel     = 16 // plugins' max_parallel on the server
	DefaultParallel        = 1  // targets of a batch one after the other
	DefaultParallelRegions = 1
	DefaultFailuresToStop  = 1
	DefaultExpectStatus    = 200
	// DefaultHealthInterval is ripcord's choice: the seed leaves interval
	// without a default, and 30s is what its own example uses.
	DefaultHealthInterval = 30 * time.Second
	// MaxBake bounds bake and batch_bake: a longer wait is a typo, not a plan.
	MaxBake = 24 * time.Hour
)

// DefaultMaxUnavailable takes targets out of service one at a time.
var DefaultMaxUnavailable = Number(1)

// Reserved target labels: they place a target and split waves by: az|region.
const (
	LabelRegion = "region"
	LabelAZ     = "az"
)

// Target is one host the deploy updates, placed by its labels.
type Target struct {
	Host   string            `yaml:"host"`
	Labels map[string]string `yaml:"labels"`

	path string    // where it was read, e.g. targets[3]
	at   positions // nil when built in Go
}

// Targets is the `targets` key of an environment.
type Targets []Target

// By says how a wave divides into passes.
type By string

const (
	ByAZ     By = "az"     // one pass per availability zone
	ByRegion By = "region" // one pass per region
)

// OnFailure says what happens to stages already run when a pass fails.
type OnFailure string

const (
	Stop         OnFailure = "stop"
	RollbackWave OnFailure = "rollback-wave"
	RollbackAll  OnFailure = "rollback-all"
)

// Spec is the `rollout` key of an environment.
type Spec struct {
	// Regions orders the regions; unlisted ones follow alphabetically.
	Regions          []string  `yaml:"regions"`
	Waves            []Wave    `yaml:"waves"`
	MaxUnavailable   Quantity  `yaml:"max_unavailable"`
	OnFailure        OnFailure `yaml:"on_failure"`
	ApprovalsBetween []string  `yaml:"approvals_between"`
	Health           *Health   `yaml:"health"`
	Parallel         Quantity  `yaml:"parallel"`
	PrometheusURL    string    `yaml:"prometheus_url"`
	AlertmanagerURL  string    `yaml:"alertmanager_url"`

	// Workflow is the deploy workflow file dispatched once per batch
	// (default deploy.yml); Prepare, when set, runs once before the first
	// batch (the seed's once-only steps: secrets, artifacts, qa).
	Workflow string `yaml:"workflow"`
	Prepare  string `yaml:"prepare"`
	// ProbeWorkflow is dispatched on a region's runners at each reading
	// that has probes with from: runners (default ripcord-probe.yml); it
	// posts what the runners saw with the bundled action's probe mode.
	ProbeWorkflow string `yaml:"probe_workflow"`
	// QueueTimeout is how long a batch's run may wait for a runner before
	// its pass fails with "no runner for region <region>" (default 10m).
	QueueTimeout   time.Duration   `yaml:"queue_timeout"`
	Approvals      *Approvals      `yaml:"approvals"`
	Freezes        []Freeze        `yaml:"freezes"`
	ProtectionRule *ProtectionRule `yaml:"protection_rule"`

	root string    // path of the rollout key, e.g. rollout
	at   positions // nil when built in Go
}

// Wave is one step of the rollout: the targets its selector picks, divided
// by az or region into passes.
type Wave struct {
	Name   string `yaml:"name"`
	Select string `yaml:"select"`
	By     By     `yaml:"by"` // "" keeps the wave undivided
	// ParallelRegions is how many regions one stage updates together.
	ParallelRegions int           `yaml:"parallel_regions"`
	Bake            time.Duration `yaml:"bake"`
	// BatchBake, when set, gates every batch of a pass but the last; 0s is a
	// single read.
	BatchBake      *time.Duration `yaml:"batch_bake"`
	MaxUnavailable Quantity       `yaml:"max_unavailable"`
	Parallel       Quantity       `yaml:"parallel"`
}

// Health is what the gate after each stage reads.
type Health struct {
	Interval       time.Duration `yaml:"interval"`
	FailuresToStop int           `yaml:"failures_to_stop"`
	Probes         []Probe       `yaml:"probes"`
	Metrics        []Metric      `yaml:"metrics"`
	Alerts         *Alerts       `yaml:"alerts"`
}

// Probe is an HTTP check sent to every target of a stage; {host} is replaced.
type Probe struct {
	URL          string `yaml:"url"`
	ExpectStatus int    `yaml:"expect_status"`
	// From says who sends the probe: the region's runners (default), which
	// reach targets on networks the server cannot, or the server itself.
	From ProbeFrom `yaml:"from"`
}

// Metric is a Prometheus query read for every pass; it is red above Max,
// below Min, or without data.
type Metric struct {
	Name  string   `yaml:"name"`
	Query string   `yaml:"query"`
	Max   *float64 `yaml:"max"`
	Min   *float64 `yaml:"min"`
}

// Alerts blocks a stage while an active alert matches every condition of a
// BlockOn entry (selector syntax, e.g. "severity=critical").
type Alerts struct {
	BlockOn []string `yaml:"block_on"`
}

// Quantity is a count of targets written as a number (3) or as a percentage
// ("25%"). The zero Quantity means "not given".
type Quantity struct {
	Value   int
	Percent bool
}

// Number is a Quantity of n targets.
func Number(n int) Quantity { return Quantity{Value: n} }

// Percent is a Quantity of p percent of the targets.
func Percent(p int) Quantity { return Quantity{Value: p, Percent: true} }

// IsZero reports whether q was not given.
func (q Quantity) IsZero() bool { return q.Value == 0 }

// Of resolves q against n targets: a percentage is of n rounded down and at
// least 1; a number is itself (at least 1), even above n.
func (q Quantity) Of(n int) int {
	v := q.Value
	if q.Percent {
		v = n * q.Value / 100
	}
	return max(v, 1)
}

func (q Quantity) String() string {
	if q.Percent {
		return strconv.Itoa(q.Value) + "%"
	}
	return strconv.Itoa(q.Value)
}

// ParseQuantity reads "3" or "25%": at least 1, a percentage at most 100%.
func ParseQuantity(s string) (Quantity, error) {
	digits, percent := strings.CutSuffix(strings.TrimSpace(s), "%")
	n, err := strconv.Atoi(digits)
	switch {
	case err != nil:
		return Quantity{}, fmt.Errorf("%q is not a whole number or a percentage like 25%%", s)
	case n < 1:
		return Quantity{}, fmt.Errorf("%q must be at least 1 (or 1%%)", s)
	case percent && n > 100:
		return Quantity{}, fmt.Errorf("%q is more than 100%%", s)
	}
	return Quantity{Value: n, Percent: percent}, nil
}
