package rolloutflow

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/rollout"
	"github.com/ripcord/ripcord/rollout/health"
)

// Probes with from: runners (the default) are sent by the region's own
// runners, since targets are often reachable only from their region. At
// each reading that has them, the executor dispatches the environment's
// probe workflow once per pass (or batch) on the runners of its region;
// the workflow's job runs the bundled action with mode: probe, which sends
// the probes and posts what it saw to POST /api/v1/rollouts/{id}/probes.
// The reading waits for those results until an interval after the
// dispatch; a round whose results have not come by then is red ("no result
// from the runners in <region>").

// RunnerProbe is one probe a runner sent, as the action posts it.
type RunnerProbe struct {
	URL    string `json:"url"`
	Host   string `json:"host"`
	Status int    `json:"status"` // 0 when no answer came
	Error  string `json:"error,omitempty"`
}

// ProbeTarget is one probe the runners are asked to send: the workflow's
// probes input is a JSON list of them, with {host} already substituted.
type ProbeTarget struct {
	URL          string `json:"url"`
	Host         string `json:"host"`
	ExpectStatus int    `json:"expect_status"`
}

// runnerTargets are the probes with from: runners, sent to each of hosts.
func runnerTargets(h *rollout.Health, hosts []string) []ProbeTarget {
	if h == nil {
		return nil
	}
	var out []ProbeTarget
	for _, p := range h.Probes {
		if p.From != rollout.FromRunners {
			continue
		}
		for _, host := range hosts {
			out = append(out, ProbeTarget{URL: health.ProbeURL(p, host), Host: host,
				ExpectStatus: cmp.Or(p.ExpectStatus, rollout.DefaultExpectStatus)})
		}
	}
	return out
}

// probeRef is the round of the i-th scope of req: one per pass of a
// stage's gate, the batch's for a batch gate.
func probeRef(req ReadRequest, i int) Ref {
	if req.Pass >= 0 {
		return Ref{Kind: KindProbe, Stage: req.Stage, Pass: req.Pass, Batch: req.Batch}
	}
	return Ref{Kind: KindProbe, Stage: req.Stage, Pass: i, Batch: -1}
}

// readingID names a round's reading in the workflow's inputs and in the
// post that answers it: stage.pass.batch.n.
func readingID(ref Ref, n int) string {
	return fmt.Sprintf("%d.%d.%d.%d", ref.Stage, ref.Pass, ref.Batch, n)
}

// roundScope is the pass a round probes and the hosts it probes there.
func roundScope(p *rollout.Plan, ref Ref) (rollout.Pass, []string, bool) {
	if ref.Stage < 0 || ref.Stage >= len(p.Stages) || ref.Pass < 0 || ref.Pass >= len(p.Stages[ref.Stage].Passes) {
		return rollout.Pass{}, nil, false
	}
	pass := p.Stages[ref.Stage].Passes[ref.Pass]
	if ref.Batch < 0 {
		return pass, pass.Hosts, true
	}
	if ref.Batch >= len(pass.Batches) {
		return rollout.Pass{}, nil, false
	}
	return pass, pass.Batches[ref.Batch].Hosts, true
}

// runnersOf names where a pass's runners are, for messages.
func runnersOf(p rollout.Pass) string { return cmp.Or(p.Region, p.Name) }

// runnerRounds makes sure every round of reading req is dispatched, and
// returns them with the time to wait until, zero when the reading can be
// judged: every round's results came, or its interval is over. evs are
// stored with the claims when there are rounds to dispatch, and cleared.
func (x *executor) runnerRounds(ctx context.Context, r *Rollout, req ReadRequest, rounds map[Ref]probeRound, scopes int, evs *[]Event) (map[Ref]probeRound, time.Time, error) {
	var err error
	interval := rollout.DefaultHealthInterval
	if h := r.Snapshot.Plan.Health; h != nil && h.Interval > 0 {
		interval = h.Interval
	}
	var todo, again []Ref
	for i := range scopes {
		ref := probeRef(req, i)
		p := rounds[ref]
		switch {
		case p.Reading != readingID(ref, req.N):
			todo = append(todo, ref)
		case p.State == roundRetry && x.deps.Now().Before(p.DispatchedAt.Add(interval)):
			// Never run: asked for again within its reading's interval.
			again = append(again, ref)
		}
	}
	if len(todo) > 0 || len(again) > 0 {
		if err := x.dispatchProbes(ctx, r, req.N, todo, again, *evs); err != nil {
			return nil, time.Time{}, err
		}
		*evs = nil
		if rounds, err = loadProbeRounds(ctx, x.deps.DB.Write, r.ID); err != nil {
			return nil, time.Time{}, err
		}
	}
	now, wait := x.deps.Now(), time.Time{}
	for i := range scopes {
		p := rounds[probeRef(req, i)]
		if p.State == RunSuccess || p.State == RunFailure {
			continue
		}
		due := p.DispatchedAt.Add(interval)
		if !now.Before(due) {
			continue
		}
		if retry := now.Add(probeRetryDelay); p.State == roundRetry && retry.Before(due) {
			due = retry
		}
		if wait.IsZero() || due.Before(wait) {
			wait = due
		}
	}
	return rounds, wait, nil
}

// pendingReading is req, or the earlier reading of the same gate whose
// rounds are still out: when its interval is over the machine, which knows
// nothing of rounds, asks for the reading due by then, but the earlier one
// must be judged (red where results are missing), not skipped.
func pendingReading(m Machine, rounds map[Ref]probeRound, req ReadRequest) ReadRequest {
	b := m.Bake
	if req.Pass >= 0 {
		if req.Pass >= len(m.Passes) || m.Passes[req.Pass].BatchBake == nil {
			return req
		}
		b = *m.Passes[req.Pass].BatchBake
	}
	var stage, pass, batch, n int
	if _, err := fmt.Sscanf(rounds[probeRef(req, 0)].Reading, "%d.%d.%d.%d", &stage, &pass, &batch, &n); err != nil {
		return req
	}
	if n > b.Reads && n < req.N {
		req.N = n
	}
	return req
}

// dispatchProbes claims the rounds with the machine and evs (refs, new;
// again, ones GitHub gave no answer for before), then asks GitHub for each
// claimed one, as dispatch does for a batch: a round is never dispatched
// twice at once, and one lost in a crash is simply red. A 4xx is a
// refusal: the round is red (failure). A 5xx or no answer sent no probe:
// the round is left to be asked for again (roundRetry), which is no
// reading, until its interval is over.
func (x *executor) dispatchProbes(ctx context.Context, r *Rollout, n int, refs, again []Ref, evs []Event) error {
	now := x.deps.Now()
	var claimed []Ref
	retried := map[Ref]bool{}
	err := x.commit(ctx, r, evs, func(tx *sql.Tx) error {
		for _, ref := range refs {
			ok, err := claimProbeRound(ctx, tx, r.ID, ref, readingID(ref, n), now)
			if err != nil {
				return err
			}
			if ok {
				claimed = append(claimed, ref)
			}
		}
		for _, ref := range again {
			ok, err := reclaimProbeRound(ctx, tx, r.ID, readingID(ref, n), now)
			if err != nil {
				return err
			}
			if ok {
				claimed, retried[ref] = append(claimed, ref), true
			}
		}
		return nil
	})
	if err != nil || len(claimed) == 0 {
		return err
	}
	workflow := cmp.Or(r.Snapshot.Settings.ProbeWorkflow, rollout.DefaultProbeWorkflow)
	gh, ghErr := x.deps.GitHub.NewInstallationClient(r.InstallationID)
	for _, ref := range claimed {
		reading := readingID(ref, n)
		state, detail, runID, err := RunQueued, "", int64(0), ghErr
		if err == nil {
			runID, _, err = dispatchWorkflow(ctx, gh, r.Repository, workflow, r.Snapshot.Settings.Ref, probeInputs(r, ref, reading))
		}
		audit := ""
		switch {
		case err != nil && (err == ghErr || refused(err)):
			state, detail = RunFailure, err.Error()
			audit = "probe workflow of reading " + reading + " not dispatched: " + detail
		case err != nil:
			state, detail = roundRetry, err.Error()
			if !retried[ref] {
				audit = "probe workflow of reading " + reading + " not dispatched, asked for again: " + detail
			}
		}
		x.deps.Log.Info("rollout probes dispatched", "rollout", r.ID, "reading", reading, "workflow", workflow, "run_id", runID, "error", detail)
		err = x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
			if err := setProbeDispatched(ctx, tx, r.ID, reading, runID, state, detail, x.deps.Now()); err != nil {
				return err
			}
			if audit == "" {
				return nil
			}
			return insertAudit(ctx, tx, r.ID, x.deps.Now(), "dispatch", audit)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// probeInputs are the probe workflow's inputs: the rollout and reading to
// post for, the region whose runners run it (for runs-on), the hosts, and
// the probes to send.
func probeInputs(r *Rollout, ref Ref, reading string) map[string]any {
	pass, hosts, _ := roundScope(r.Snapshot.Plan, ref)
	targets, _ := json.Marshal(hosts)
	return map[string]any{"rollout_id": r.ID, "reading": reading, "region": pass.Region,
		"targets": string(targets), "probes": compactJSON(runnerTargets(r.Snapshot.Plan.Health, hosts))}
}

// compactJSON encodes v without HTML escapes: the action reads the probes
// with bash, and a URL's & must stay an &.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return string(bytes.TrimSpace(b.Bytes()))
}

// runnerReading is what the runners said for a round.
func runnerReading(p *rollout.Plan, ref Ref, round probeRound, at time.Time) health.Reading {
	pass, hosts, _ := roundScope(p, ref)
	where := runnersOf(pass)
	var reason string
	switch round.State {
	case RunSuccess:
		var posted []RunnerProbe
		if err := json.Unmarshal([]byte(round.Detail), &posted); err != nil {
			reason = fmt.Sprintf("probes: results from the runners in %s unreadable: %v", where, err)
			break
		}
		return health.FromRunnerProbes(judgeRunnerProbes(runnerTargets(p.Health, hosts), posted, where), at)
	case RunFailure, roundRetry:
		reason = fmt.Sprintf("probes: probe workflow for the runners in %s not dispatched: %s", where, round.Detail)
	default:
		reason = "probes: no result from the runners in " + where
	}
	return health.Merge(health.Reading{At: at, Reasons: []string{reason}})
}

// judgeRunnerProbes judges the posted results against the probes asked
// for: one asked for and not posted is red, as a probe without answer is.
func judgeRunnerProbes(want []ProbeTarget, posted []RunnerProbe, where string) []health.ProbeResult {
	got := map[[2]string]RunnerProbe{}
	for _, p := range posted {
		got[[2]string{p.URL, p.Host}] = p
	}
	out := make([]health.ProbeResult, 0, len(want))
	for _, t := range want {
		res := health.ProbeResult{URL: t.URL, Host: t.Host, From: string(rollout.FromRunners), ExpectStatus: t.ExpectStatus}
		if p, ok := got[[2]string{t.URL, t.Host}]; ok {
			res.Status, res.Error = p.Status, p.Error
		} else {
			res.Error = "no result from the runners in " + where
		}
		out = append(out, health.JudgeProbe(res))
	}
	return out
}
