package rolloutflow

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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
// A round not dispatched for GitHub's rate limit or for access lost is no
// reading: it is waited for (the reset, the next poll), however long.
func (x *executor) runnerRounds(ctx context.Context, r *Rollout, req ReadRequest, rounds map[Ref]probeRound, scopes int, evs *[]Event) (map[Ref]probeRound, time.Time, error) {
	interval := rollout.DefaultHealthInterval
	if h := r.Snapshot.Plan.Health; h != nil && h.Interval > 0 {
		interval = h.Interval
	}
	lim, err := readLimit(ctx, x.deps.DB.Write, r.InstallationID)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := x.deps.Now()
	var todo, again []Ref
	for i := range scopes {
		ref := probeRef(req, i)
		p := rounds[ref]
		switch {
		case p.Reading != readingID(ref, req.N):
			todo = append(todo, ref)
		case p.State == roundRetry && now.Before(p.DispatchedAt.Add(interval)):
			// Never run: asked for again within its reading's interval.
			again = append(again, ref)
		case p.State == roundLimited && !lim.holds(now), p.State == roundLost && !now.Before(p.UpdatedAt.Add(runPoll)):
			// Not sent: asked for again after the reset, or at the poll.
			again = append(again, ref)
		}
	}
	if len(todo) > 0 || len(again) > 0 {
		if err := x.dispatchProbes(ctx, r, req.N, todo, again, *evs, rounds, interval); err != nil {
			return nil, time.Time{}, err
		}
		*evs = nil
		if rounds, err = loadProbeRounds(ctx, x.deps.DB.Write, r.ID); err != nil {
			return nil, time.Time{}, err
		}
		if lim, err = readLimit(ctx, x.deps.DB.Write, r.InstallationID); err != nil {
			return nil, time.Time{}, err
		}
	}
	now, wait := x.deps.Now(), time.Time{}
	for i := range scopes {
		p := rounds[probeRef(req, i)]
		var due time.Time
		switch p.State {
		case RunSuccess, RunFailure:
			continue
		case roundLimited, roundLost:
			due = lim.reset
			if p.State == roundLost {
				due = p.UpdatedAt.Add(runPoll)
			}
			if !due.After(now) {
				// The limit went meanwhile, or another tick claimed the
				// round: look again shortly.
				due = now.Add(probeRetryDelay)
			}
		default:
			due = p.DispatchedAt.Add(interval)
			if !now.Before(due) {
				continue
			}
			if retry := now.Add(probeRetryDelay); p.State == roundRetry && retry.Before(due) {
				due = retry
			}
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
// again, ones not dispatched before), then asks GitHub for each claimed
// one, as dispatch does for a batch: a round is never dispatched twice at
// once, and one lost in a crash is simply red. A 4xx is a refusal: the
// round is red (failure). A 5xx or no answer sent no probe: the round is
// left to be asked for again (roundRetry), which is no reading, until its
// interval is over. Neither is GitHub's rate limit nor access lost a
// reading (roundLimited, roundLost; probes_wait.go): while the
// installation's stored limit holds, no round is even sent.
func (x *executor) dispatchProbes(ctx context.Context, r *Rollout, n int, refs, again []Ref, evs []Event, rounds map[Ref]probeRound, interval time.Duration) error {
	now := x.deps.Now()
	var claimed []Ref
	var lim installationLimit
	retried := map[Ref]bool{}
	err := x.commit(ctx, r, evs, func(tx *sql.Tx) error {
		var err error
		if lim, err = readLimit(ctx, tx, r.InstallationID); err != nil {
			return err
		}
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
				claimed, retried[ref] = append(claimed, ref), rounds[ref].State == roundRetry
			}
		}
		if !lim.holds(now) {
			return nil
		}
		// Sent now, the dispatches would be spent against the
		// installation's limit (ratewait.go): they wait for its reset.
		for _, ref := range claimed {
			if err := x.roundLimited(ctx, tx, r, readingID(ref, n), lim, since(rounds[ref], readingID(ref, n), now).Add(interval)); err != nil {
				return err
			}
		}
		claimed = nil
		return nil
	})
	if err != nil || len(claimed) == 0 {
		if err == nil && lim.holds(now) {
			r.limitedUntil = lim.reset
		}
		return err
	}
	workflow := cmp.Or(r.Snapshot.Settings.ProbeWorkflow, rollout.DefaultProbeWorkflow)
	gh, ghErr := x.deps.GitHub.NewInstallationClient(r.InstallationID)
	lost := "" // why the App has no access, once a round met it: the others are not sent
	for _, ref := range claimed {
		reading := readingID(ref, n)
		deadline := since(rounds[ref], reading, now).Add(interval)
		if l, err := readLimit(ctx, x.deps.DB.Write, r.InstallationID); err != nil {
			return err
		} else if l.holds(x.deps.Now()) {
			// Met by an earlier round of this tick.
			if err := x.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return x.roundLimited(ctx, tx, r, reading, l, deadline) }); err != nil {
				return err
			}
			continue
		}
		if lost != "" {
			if err := x.roundLost(ctx, r, reading, lost, nil); err != nil {
				return err
			}
			continue
		}
		runID, sent, err := int64(0), false, ghErr
		if err == nil {
			runID, sent, err = dispatchWorkflow(ctx, gh, r.Repository, workflow, r.Snapshot.Settings.Ref, probeInputs(r, ref, reading))
		}
		why, until, limited, rerr := x.probeUnsent(ctx, gh, r, workflow, sent, err)
		switch {
		case limited:
			err = x.probeLimitMet(ctx, r, reading, until, deadline, errors.Join(err, rerr))
		case why != "":
			lost, err = why, x.roundLost(ctx, r, reading, why, err)
		default:
			// A refusal is what GitHub answered itself; a 404 whose
			// repository it did not answer for (rerr) says nothing.
			refusal := err != nil && rerr == nil && (err == ghErr || refused(err))
			err = x.probeAnswered(ctx, r, reading, workflow, runID, errors.Join(err, rerr), refusal, retried[ref], lim)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// probeAnswered stores GitHub's answer to the dispatch of reading's round:
// a run (err nil), a refusal (red), or none (asked for again, said once
// unless retried). A retried round that gets its run is dispatched as of
// now (probeSentAt). An answer after the reset of lim, a limit met before,
// ends its episode.
func (x *executor) probeAnswered(ctx context.Context, r *Rollout, reading, workflow string, runID int64, err error, refusal, retried bool, lim installationLimit) error {
	state, detail, audit := RunQueued, "", ""
	switch {
	case refusal && notFound(err):
		// The repository reads (probeUnsent): the workflow is missing.
		state, detail = RunFailure, workflowNotFound(workflow, r.Repository)
		audit = "probe workflow of reading " + reading + " not dispatched: " + detail
	case refusal:
		state, detail = RunFailure, err.Error()
		audit = "probe workflow of reading " + reading + " not dispatched: " + detail
	case err != nil:
		state, detail = roundRetry, err.Error()
		if !retried {
			audit = "probe workflow of reading " + reading + " not dispatched, asked for again: " + detail
		}
	}
	lifted := !lim.reset.IsZero() && (err == nil || refusal)
	x.deps.Log.Info("rollout probes dispatched", "rollout", r.ID, "reading", reading, "workflow", workflow, "run_id", runID, "error", detail)
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if retried && err == nil {
			// Sent at last: its results get their whole interval from now.
			if err := probeSentAt(ctx, tx, r.ID, reading, x.deps.Now()); err != nil {
				return err
			}
		}
		if err := setProbeDispatched(ctx, tx, r.ID, reading, runID, state, detail, x.deps.Now()); err != nil {
			return err
		}
		if lifted {
			if err := liftLimit(ctx, tx, r.InstallationID, x.deps.Now()); err != nil {
				return err
			}
		}
		if audit == "" {
			return nil
		}
		return insertAudit(ctx, tx, r.ID, x.deps.Now(), "dispatch", audit)
	})
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
