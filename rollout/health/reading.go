// Package health reads and judges the health gate after a stage of a
// rollout (seed 001, "Health gate"): probes to the stage's targets,
// Prometheus metrics and Alertmanager alerts, each reading green or red
// with the reason a status page shows. The verdict over the readings of a
// bake is the executor's (app/rolloutflow), which owns the clock and the
// waits.
package health

import (
	"fmt"
	"strings"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

// Scope is what one reading looks at: a pass of a stage (or a batch, for
// batch_bake), with the values substituted into queries and matched
// against alert labels.
type Scope struct {
	Application string   `json:"application"`
	Environment string   `json:"environment"`
	Region      string   `json:"region,omitempty"`
	AZ          string   `json:"az,omitempty"`
	Hosts       []string `json:"hosts,omitempty"`
}

// PassScope is the scope of a pass of a planned stage; the seed reads
// metrics "per pass", and a stage's gate is the merge of its passes'.
func PassScope(application, environment string, p rollout.Pass) Scope {
	return Scope{Application: application, Environment: environment, Region: p.Region, AZ: p.AZ, Hosts: p.Hosts}
}

// where names the scope in messages as the seed does: (us-1/us-1a).
func (s Scope) where() string {
	switch {
	case s.Region != "" && s.AZ != "":
		return fmt.Sprintf(" (%s/%s)", s.Region, s.AZ)
	case s.Region != "":
		return fmt.Sprintf(" (%s)", s.Region)
	case s.AZ != "":
		return fmt.Sprintf(" (%s)", s.AZ)
	}
	return ""
}

// Reading is one look at the gate's checks. It is green when every check
// is; Reasons say why it is not, one line per red check.
type Reading struct {
	At      time.Time      `json:"at"`
	Green   bool           `json:"green"`
	Reasons []string       `json:"reasons,omitempty"`
	Probes  []ProbeResult  `json:"probes,omitempty"`
	Metrics []MetricResult `json:"metrics,omitempty"`
	Alerts  []AlertResult  `json:"alerts,omitempty"`
}

// ProbeResult is one probe sent to one target. Runners post these as facts
// for probes with from: runners; the server fills them for from: server.
type ProbeResult struct {
	URL          string `json:"url"` // with {host} substituted
	Host         string `json:"host"`
	From         string `json:"from"` // runners | server
	ExpectStatus int    `json:"expect_status"`
	Status       int    `json:"status,omitempty"` // 0 when no answer came
	Error        string `json:"error,omitempty"`
	Green        bool   `json:"green"`
	Reason       string `json:"reason,omitempty"`
}

// MetricResult is one metric query. Value is the value judged: the worst
// series (the highest against max, the lowest against min); nil when the
// query returned no data or failed.
type MetricResult struct {
	Name   string   `json:"name"`
	Query  string   `json:"query"` // with placeholders substituted
	Value  *float64 `json:"value,omitempty"`
	Series int      `json:"series"`
	Max    *float64 `json:"max,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Green  bool     `json:"green"`
	Reason string   `json:"reason,omitempty"`
}

// AlertResult is an active alert that blocks the stage, or the failure to
// read alerts at all (Error, with no alert).
type AlertResult struct {
	Name     string            `json:"name,omitempty"` // the alertname label
	Labels   map[string]string `json:"labels,omitempty"`
	BlockOn  string            `json:"block_on,omitempty"` // the entry it matched
	StartsAt time.Time         `json:"starts_at,omitzero"`
	Error    string            `json:"error,omitempty"`
	Reason   string            `json:"reason"`
}

// FromRunnerProbes turns probe results posted by a region's runners into a
// reading: red when any result is red, or when there are none, since a gate
// that saw nothing cannot say the release is healthy.
func FromRunnerProbes(results []ProbeResult, at time.Time) Reading {
	r := Reading{At: at, Probes: results}
	if len(results) == 0 {
		r.Reasons = append(r.Reasons, "probes: no result from the runners")
	}
	return r.finish()
}

// Merge combines readings taken for the same moment (the server's metrics
// and alerts, the runners' probes, one reading per pass of a stage) into
// one, green when all are. At is the latest of them.
func Merge(rs ...Reading) Reading {
	var out Reading
	for _, r := range rs {
		if r.At.After(out.At) {
			out.At = r.At
		}
		out.Reasons = append(out.Reasons, r.Reasons...)
		out.Probes = append(out.Probes, r.Probes...)
		out.Metrics = append(out.Metrics, r.Metrics...)
		out.Alerts = append(out.Alerts, r.Alerts...)
	}
	return out.finish()
}

// LastReason is the red reason a status shows for a reading, the seed's
// stages[].gate ("metric error-rate (us-1/us-1a): value 0.2 above max 0.01");
// several red checks are joined with "; ".
func LastReason(r Reading) string {
	if r.Green {
		return ""
	}
	if len(r.Reasons) == 0 {
		return "red"
	}
	return strings.Join(r.Reasons, "; ")
}

// finish adds the reasons of red results not yet listed and sets Green.
func (r Reading) finish() Reading {
	seen := map[string]bool{}
	for _, reason := range r.Reasons {
		seen[reason] = true
	}
	// A red result posted without a reason (a runner's fact, say) must
	// still turn the reading red.
	add := func(reason, fallback string) {
		if reason == "" {
			reason = fallback
		}
		if !seen[reason] {
			seen[reason] = true
			r.Reasons = append(r.Reasons, reason)
		}
	}
	for _, p := range r.Probes {
		if !p.Green {
			add(p.Reason, fmt.Sprintf("probe %s: red", p.URL))
		}
	}
	for _, m := range r.Metrics {
		if !m.Green {
			add(m.Reason, fmt.Sprintf("metric %s: red", m.Name))
		}
	}
	for _, a := range r.Alerts {
		add(a.Reason, fmt.Sprintf("alert %s: firing", a.Name))
	}
	r.Green = len(r.Reasons) == 0
	return r
}
