package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollout"
	"github.com/ripcord/ripcord/rollout/health"
)

// TickArgs moves one rollout as far as it can go now. Ticks are queued when
// something happens (a run ends, a vote, an abort) and for the time the
// machine waits for; an extra tick finds nothing to do.
type TickArgs struct {
	RolloutID string `json:"rollout_id"`
	// Wake is when the tick was scheduled for (unix µs; 0: at once).
	Wake int64 `json:"wake"`
}

// Kind names the job in the queue.
func (TickArgs) Kind() string { return "rollout_tick" }

const (
	tickAttempts = 25
	tickTimeout  = 5 * time.Minute
	// runPoll is how often a rollout with runs in flight asks GitHub about
	// them itself: a workflow_run event can be lost, or arrive before the
	// run's id was stored.
	runPoll = 5 * time.Minute
	// maxSteps bounds one tick: a rollout of a thousand batches still
	// stops to store its state now and then.
	maxSteps = 200
)

// executor is the shell around Machine: it reads the inputs, does the I/O
// the machine asks for, and stores each move with the next tick.
type executor struct {
	deps    pipeline.Deps
	health  gateReader
	metrics *metrics
	server  Server // rollout.* of the server config
	// afterInputs, when set (by tests), runs between a tick's read of the
	// rollout's inputs and its first save.
	afterInputs func(id string)
	// beforeAbortMark, when set (by tests), runs between an abort's read
	// of the rollout and its store.
	beforeAbortMark func(id string)
	// afterClaim, when set (by tests), runs between the commit of a
	// batch's claim and its dispatch.
	afterClaim func(id string)
	// beforeCreateTx, when set (by tests), runs as a rollout is being
	// created, before the transaction that stores it.
	beforeCreateTx func(id string)
	// afterQueueRead, when set (by tests), runs in a start's transaction
	// between its read of the queue and the store of its rollout.
	afterQueueRead func(id string)
}

type tickWorker struct {
	river.WorkerDefaults[TickArgs]
	x *executor
}

func (w *tickWorker) Timeout(*river.Job[TickArgs]) time.Duration { return tickTimeout }

func (w *tickWorker) Work(ctx context.Context, job *river.Job[TickArgs]) error {
	return w.x.Tick(ctx, job.Args.RolloutID, job.Args.Wake != 0)
}

// Tick runs the rollout until it waits or ends. It first adopts the runs
// of batches whose dispatch was cut short (adopt.go); a scheduled tick
// also asks GitHub about the runs in flight. The runs GitHub gave no
// answer about are Unread on this tick: the machine moves on what the
// others say and waits for them (the next poll asks again). Before any
// of it, a rollout of a repository the App was uninstalled from ends,
// with no GitHub call (uninstalled.go), and one whose installation is
// suspended waits (suspended.go).
func (x *executor) Tick(ctx context.Context, id string, scheduled bool) error {
	if done, err := x.lookBeforeGitHub(ctx, id); err != nil || done {
		return err // ended (uninstalled), or waits (suspended)
	}
	unread, limited, err := x.pollRuns(ctx, id, scheduled)
	if err != nil {
		return err
	}
	for range maxSteps {
		r, err := getRollout(ctx, x.deps.DB.Write, id)
		if err != nil {
			return err
		}
		if r.Machine.Phase == PhaseDone && r.WakeAt.IsZero() {
			return nil
		}
		r.limitedUntil = limited
		in, err := x.inputs(ctx, &r)
		if err != nil {
			return err
		}
		for ref := range unread {
			if run, ok := in.Runs[ref]; ok && run.State != RunSuccess && run.State != RunFailure {
				run.Unread = true
				in.Runs[ref] = run
			}
		}
		if x.afterInputs != nil {
			x.afterInputs(id)
		}
		queued := r.Machine.Phase == PhaseQueue
		act, evs := r.Machine.Next(in)
		r.leavesQueue = queued && r.Machine.Phase != PhaseQueue && r.Machine.Phase != PhaseDone
		switch act.Kind {
		case ActDispatch:
			var retry time.Time
			if retry, err = x.dispatch(ctx, &r, act.Ref, evs); err == nil && !retry.IsZero() {
				// Not dispatched, nor failed (no access to the
				// repository): the batch is dispatched on a later tick.
				return x.settle(ctx, &r, Action{Kind: ActWait, Until: retry}, nil, in.Runs)
			}
		case ActRead:
			var wait time.Time
			if wait, evs, err = x.read(ctx, &r, act.Read, evs); err == nil && !wait.IsZero() {
				// The runners' probe results are not all in yet.
				return x.settle(ctx, &r, Action{Kind: ActWait, Until: wait}, evs, in.Runs)
			}
		default:
			return x.settle(ctx, &r, act, evs, in.Runs)
		}
		if err != nil {
			return err
		}
	}
	return x.queueTick(ctx, id) // more to do: in a fresh job
}

// inputs reads what the machine needs on this tick. A queued rollout that
// nothing holds any longer leaves the queue on this tick: its rollback
// version is chosen now (r.Previous), from the records as they are now, and
// stored with the machine's move (saveMachine), so it is chosen once.
func (x *executor) inputs(ctx context.Context, r *Rollout) (Inputs, error) {
	runs, err := loadRuns(ctx, x.deps.DB.Write, r.ID)
	if err != nil {
		return Inputs{}, err
	}
	in := Inputs{Now: x.deps.Now(), Plan: r.Snapshot.Plan, Settings: r.Snapshot.Settings, Runs: runs,
		Author: r.Author, AbortBy: r.AbortBy, AbortReason: r.AbortReason, Freeze: r.Snapshot.Settings.freezeCheck(),
		HasPrevious: r.Previous != "", Hold: r.Hold}
	if r.Machine.Phase == PhaseQueue {
		if in.Ahead, err = ahead(ctx, x.deps.DB.Write, *r); err != nil {
			return Inputs{}, err
		}
		if in.Ahead == "" && in.Hold == "" && in.AbortBy == "" {
			rec, err := x.deps.Records.Get(ctx, r.ReleaseID)
			if err != nil {
				return Inputs{}, fmt.Errorf("release %s of rollout %s: %w", r.ReleaseID, r.ID, err)
			}
			if r.Previous, err = x.previous(ctx, rec); err != nil {
				return Inputs{}, err
			}
			in.HasPrevious = r.Previous != ""
		}
	}
	if !in.HasPrevious && r.Machine.Phase != PhaseQueue && r.Machine.Phase != PhaseDone {
		rec, err := x.deps.Records.Get(ctx, r.ReleaseID)
		if err != nil {
			return Inputs{}, fmt.Errorf("release %s of rollout %s: %w", r.ReleaseID, r.ID, err)
		}
		if rec.Kind == records.KindRollback {
			in.NoPrevious = rollbackNoPrevious(rec)
		}
	}
	if r.Machine.Phase == PhaseApproval {
		if in.Approvals, err = loadApprovals(ctx, x.deps.DB.Write, r.ID, r.Machine.Stage); err != nil {
			return Inputs{}, err
		}
	}
	return in, nil
}

// commit stores r's machine and evs with more, in one transaction.
func (x *executor) commit(ctx context.Context, r *Rollout, evs []Event, more func(tx *sql.Tx) error) error {
	now := x.deps.Now()
	err := x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if r.leavesQueue {
			if err := x.stillFirst(ctx, tx, r); err != nil {
				return err
			}
		}
		if err := saveMachine(ctx, tx, r, now); err != nil {
			return err
		}
		for _, e := range evs {
			if e.Message == "" {
				continue
			}
			if err := insertAudit(ctx, tx, r.ID, now, e.Type, e.Message); err != nil {
				return err
			}
		}
		if len(evs) > 0 {
			if err := queueCheck(ctx, tx, x.deps.River(), r.ID); err != nil {
				return err
			}
		}
		if more != nil {
			return more(tx)
		}
		return nil
	})
	if err != nil {
		return err
	}
	x.metrics.count(r, evs)
	return nil
}

// stillFirst checks again, in the transaction that stores r's move out of
// the queue, that nothing is ahead of it: the tick read the queue before,
// outside any transaction, and another rollout of the app and environment
// may have left it since (one stored late with an older created_at, whose
// tick ran meanwhile). On PostgreSQL the moves out of the queue of one app
// and environment are serialised by a transaction-scoped advisory lock; on
// SQLite, by its single writer. Losing is errMoved: the job is retried and
// finds the rollout ahead.
func (x *executor) stillFirst(ctx context.Context, tx *sql.Tx, r *Rollout) error {
	if err := lockQueue(ctx, tx, x.deps.DB.Dialect, r.App, r.Environment); err != nil {
		return err
	}
	a, err := ahead(ctx, tx, *r)
	if err != nil {
		return err
	}
	if a != "" {
		return fmt.Errorf("rollout %s leaves the queue but %s is ahead of it now: %w", r.ID, a, errMoved)
	}
	return nil
}

// lockQueue serialises the transactions that read the rollout queue of
// app and environment and then change it (a start, a move out of the
// queue): on PostgreSQL with a transaction-scoped advisory lock; SQLite
// has a single writer.
func lockQueue(ctx context.Context, tx *sql.Tx, dialect store.Dialect, app, environment string) error {
	if dialect != store.Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`,
		"ripcord-rollout-queue/"+app+"/"+environment); err != nil {
		return fmt.Errorf("lock the rollout queue of %s/%s: %w", app, environment, err)
	}
	return nil
}

// settle stores a machine that waits, with the tick for when it waits
// until. A wait for an event needs no tick (the event queues one), but
// with runs in flight a tick every runPoll asks GitHub in case the event
// is lost. A rollout that ends wakes the rollouts queued behind it, and
// holds them when it failed after deploying (holdBehind); one that
// succeeded reports its release healthy (queueHealthy).
func (x *executor) settle(ctx context.Context, r *Rollout, act Action, evs []Event, runs map[Ref]Run) error {
	wake := act.Until
	if act.Kind == ActDone {
		wake = time.Time{}
	} else if inFlight(runs) {
		now := x.deps.Now()
		poll := r.WakeAt
		if !poll.After(now) || poll.After(now.Add(runPoll)) {
			poll = now.Add(runPoll)
		}
		if r.limitedUntil.After(now) {
			// GitHub's rate limit: the runs are asked about after its
			// reset, and not before (pollRuns).
			poll = r.limitedUntil
		}
		if wake.IsZero() || poll.Before(wake) {
			wake = poll
		}
	}
	changed := !wake.Equal(r.WakeAt)
	r.WakeAt = wake
	if !changed && len(evs) == 0 {
		return nil
	}
	return x.commit(ctx, r, evs, func(tx *sql.Tx) error {
		if act.Kind == ActDone {
			// A rollout that succeeded saw its release healthy (healthy.go).
			if r.Machine.Status == Succeeded {
				if err := queueHealthy(ctx, tx, x.deps.River(), r.ID, ended(x.deps.Now())); err != nil {
					return err
				}
			}
			if r.Machine.Status == Failed && deployed(runs) {
				if err := holdBehind(ctx, tx, *r); err != nil {
					return err
				}
			}
			if err := queueTicksBehind(ctx, tx, x.deps.River(), r.App, r.Environment); err != nil {
				return err
			}
		}
		if !changed || wake.IsZero() {
			return nil
		}
		_, err := x.deps.River().InsertTx(ctx, tx, TickArgs{RolloutID: r.ID, Wake: wake.UnixMicro()},
			&river.InsertOpts{ScheduledAt: wake, MaxAttempts: tickAttempts})
		return err
	})
}

// read takes one health reading and stores it with its effect. With
// probes from: runners it first dispatches their probe workflows and
// returns the time to wait until for their results (with the events not
// stored yet); the reading is then taken when the results are in or that
// time has come, as of when the probes were asked for.
func (x *executor) read(ctx context.Context, r *Rollout, req ReadRequest, evs []Event) (time.Time, []Event, error) {
	now := x.deps.Now()
	ss := scopes(r, req)
	var rounds map[Ref]probeRound
	if hasRunnerProbes(r.Snapshot.Plan.Health) {
		var wait time.Time
		var err error
		if rounds, err = loadProbeRounds(ctx, x.deps.DB.Write, r.ID); err != nil {
			return time.Time{}, evs, err
		}
		req = pendingReading(r.Machine, rounds, req)
		if rounds, wait, err = x.runnerRounds(ctx, r, req, rounds, len(ss), &evs); err != nil || !wait.IsZero() {
			return wait, evs, err
		}
		for i := range ss {
			if at := rounds[probeRef(req, i)].DispatchedAt; !at.IsZero() && at.Before(now) {
				now = at
			}
		}
	}
	green, reasons := true, []string(nil)
	for i, s := range ss {
		g := x.health.read(ctx, r.Snapshot, s, now)
		if rounds != nil {
			ref := probeRef(req, i)
			g = health.Merge(g, runnerReading(r.Snapshot.Plan, ref, rounds[ref], now))
		}
		green = green && g.Green
		if !g.Green {
			reasons = append(reasons, health.LastReason(g))
		}
	}
	why := strings.Join(reasons, "; ")
	r.Machine.Observe(req, now, green, why)
	name := "gate@" + r.Snapshot.Plan.Stages[req.Stage].Name
	if req.Pass >= 0 {
		name = rollout.GateReadName(r.Snapshot.Plan.Stages[req.Stage].Passes[req.Pass].Name, req.Batch, req.N)
	}
	if !green {
		evs = append(evs, Event{Type: "reading-red", Message: fmt.Sprintf("%s reading %d red: %s", name, req.N, why)})
	}
	var closed []string // the rounds read: later posts are refused
	if rounds != nil {
		for i := range ss {
			closed = append(closed, readingID(probeRef(req, i), req.N))
		}
	}
	return time.Time{}, nil, x.commit(ctx, r, evs, func(tx *sql.Tx) error {
		if err := closeProbeRounds(ctx, tx, r.ID, closed, x.deps.Now()); err != nil {
			return err
		}
		return insertReading(ctx, tx, r.ID, req, now, green, why)
	})
}

// scopes are what a reading looks at: each pass of the stage for its gate,
// the batch's hosts for a batch gate.
func scopes(r *Rollout, req ReadRequest) []Scope {
	st := r.Snapshot.Plan.Stages[req.Stage]
	scope := func(p rollout.Pass, hosts []string) health.Scope {
		return health.Scope{Application: r.App, Environment: r.Environment, Region: p.Region, AZ: p.AZ, Hosts: hosts}
	}
	if req.Pass >= 0 {
		p := st.Passes[req.Pass]
		return []Scope{{Scope: scope(p, p.Batches[req.Batch].Hosts), ProbesOnly: true}}
	}
	out := make([]Scope, 0, len(st.Passes))
	for _, p := range st.Passes {
		out = append(out, Scope{Scope: scope(p, p.Hosts)})
	}
	return out
}

// queueTick asks for a tick at once.
func (x *executor) queueTick(ctx context.Context, id string) error {
	return x.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return queueTickTx(ctx, tx, x.deps.River(), id) })
}

func queueTickTx(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], id string) error {
	_, err := rc.InsertTx(ctx, tx, TickArgs{RolloutID: id}, &river.InsertOpts{MaxAttempts: tickAttempts})
	if err != nil {
		return fmt.Errorf("queue tick of rollout %s: %w", id, err)
	}
	return nil
}

// inFlight reports whether a dispatched run has not ended, or a dispatch
// may have been cut short: either way a tick now and then asks GitHub.
// deployed reports whether some batch of the release was dispatched: a
// rollout that failed before (in prepare, or aborted while it waited for a
// freeze) deployed nothing and says nothing about the release's fault.
func deployed(runs map[Ref]Run) bool {
	for ref := range runs {
		if ref.Kind == KindDeploy {
			return true
		}
	}
	return false
}

func inFlight(runs map[Ref]Run) bool {
	for _, r := range runs {
		if r.State == RunDispatching || r.RunID != 0 && (r.State == RunQueued || r.State == RunInProgress) {
			return true
		}
	}
	return false
}
