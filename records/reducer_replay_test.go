package records

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// memStore plays the store's role around Reduce: it loads an Input the way
// records/store*.go must (duplicate check, workload observation, the
// fact's record, open siblings, ever-healthy) and saves a Result, checking
// the invariants every Result must keep.
type memStore struct {
	t     *testing.T
	facts map[string]bool
	obs   map[string]Observation
	recs  map[string]Record
	audit []AuditEvent
	sent  []Effect
	keys  map[string]bool
}

func newStore(t *testing.T) *memStore {
	return &memStore{t: t, facts: map[string]bool{}, obs: map[string]Observation{}, recs: map[string]Record{}, keys: map[string]bool{}}
}

func (s *memStore) open(r Record) {
	s.t.Helper()
	rec, ev, err := OpenRecord(r, r.CreatedAt)
	if err != nil {
		s.t.Fatal(err)
	}
	s.recs[rec.ReleaseID] = rec
	s.audit = append(s.audit, ev)
}

func (s *memStore) input(f Fact, now time.Time) Input {
	in := Input{Fact: f, Duplicate: s.facts[f.ID()], Now: now}
	if o, ok := s.obs[f.WorkloadKey()]; ok && !f.IsTask() {
		in.Previous = &o
	}
	app, env, cluster := f.App, f.Environment, f.Cluster
	if r, ok := s.recs[f.ReleaseKey()]; ok {
		in.Record = &r
		app, env, cluster = r.App, r.Environment, r.Cluster
	}
	for _, r := range s.sorted() {
		if r.App != app || r.Environment != env || r.Cluster != cluster {
			continue
		}
		in.EverHealthy = in.EverHealthy || r.HealthyAt != nil
		if r.Open() && r.ReleaseID != f.ReleaseKey() {
			in.Siblings = append(in.Siblings, r)
		}
	}
	return in
}

func (s *memStore) sorted() []Record {
	var rs []Record
	for _, r := range s.recs {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b Record) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ReleaseID, b.ReleaseID)
	})
	return rs
}

func (s *memStore) play(f Fact, now time.Time) Result {
	s.t.Helper()
	res := Reduce(s.input(f, now))
	if res.Outcome == OutcomeDuplicate && (len(res.Records) > 0 || len(res.Audit) > 0 || len(res.Effects) > 0) {
		s.t.Fatalf("duplicate fact changed something: %+v", res)
	}
	for _, r := range res.Records {
		s.checkTransition(res, r)
		s.recs[r.ReleaseID] = r
	}
	if res.KeepFact {
		s.facts[res.FactID] = true
	}
	if res.Observation != nil {
		s.obs[res.Observation.Key()] = *res.Observation
	}
	s.audit = append(s.audit, res.Audit...)
	for _, e := range res.Effects {
		if s.keys[e.Key] {
			s.t.Fatalf("effect %s emitted twice (fact %s at %s)", e.Key, describeFact(f), now)
		}
		s.keys[e.Key] = true
		s.sent = append(s.sent, e)
	}
	return res
}

// checkTransition: every state change comes with its state_changed event,
// and healthy_at, once set, never changes.
func (s *memStore) checkTransition(res Result, r Record) {
	s.t.Helper()
	old, existed := s.recs[r.ReleaseID]
	if !existed {
		if !hasAudit(res, AuditReleaseOpened, r.ReleaseID) {
			s.t.Errorf("%s inserted without release_opened", r.ReleaseID)
		}
		old.State = StateOpened
	}
	if old.HealthyAt != nil && (r.HealthyAt == nil || !r.HealthyAt.Equal(*old.HealthyAt)) {
		s.t.Errorf("%s: healthy_at changed from %v to %v", r.ReleaseID, old.HealthyAt, r.HealthyAt)
	}
	if old.State == r.State {
		return
	}
	for _, e := range res.Audit {
		if e.Type == AuditStateChanged && e.ReleaseID == r.ReleaseID && e.Data["from"] == string(old.State) && e.Data["to"] == string(r.State) {
			return
		}
	}
	s.t.Errorf("%s moved %s -> %s without a state_changed event", r.ReleaseID, old.State, r.State)
}

func describeFact(f Fact) string {
	return fmt.Sprintf("%s %s %s step %d gen %d", f.Source, f.ReleaseKey(), f.Phase+Phase(f.Status), f.Step, f.Generation)
}

// replayStep is one thing that happens: a release is registered, or a fact
// is delivered at minute now.
type replayStep struct {
	open *Record
	fact Fact
	now  int
	want Outcome
	// states are checked after the step.
	states map[string]State
	// quiet: the step writes no audit event.
	quiet bool
	// healthySince are the minutes whose time healthy_at must hold after
	// the step.
	healthySince map[string]int
}

func deliver(f Fact, now int, want Outcome, states map[string]State) replayStep {
	return replayStep{fact: f, now: now, want: want, states: states}
}

// resync delivers the copy of the workload's last report that the agent
// sends on each resync: whatever its outcome, it writes no audit event.
func resync(f Fact, now int, want Outcome, states map[string]State) replayStep {
	return replayStep{fact: f, now: now, want: want, states: states, quiet: true}
}

func register(r Record) replayStep { return replayStep{open: &r} }

func (s *memStore) run(steps []replayStep) {
	s.t.Helper()
	for i, st := range steps {
		if st.open != nil {
			s.open(*st.open)
			continue
		}
		res := s.play(st.fact, at(st.now))
		if res.Outcome != st.want {
			s.t.Fatalf("step %d (%s at minute %d): outcome %s (%s), want %s", i, describeFact(st.fact), st.now, res.Outcome, res.Reason, st.want)
		}
		if st.quiet && len(res.Audit) > 0 {
			s.t.Fatalf("step %d (%s at minute %d): a resync wrote audit events %v", i, describeFact(st.fact), st.now, auditTypes(res))
		}
		for rel, want := range st.states {
			if got := s.recs[rel].State; got != want {
				s.t.Fatalf("step %d (%s at minute %d): %s is %s, want %s", i, describeFact(st.fact), st.now, rel, got, want)
			}
		}
		for rel, m := range st.healthySince {
			if got := s.recs[rel].HealthyAt; got == nil || !got.Equal(at(m)) {
				s.t.Fatalf("step %d (%s at minute %d): %s healthy_at %v, want %s", i, describeFact(st.fact), st.now, rel, got, at(m))
			}
		}
	}
}

// withHealthySince adds a healthy_at check to a step.
func withHealthySince(st replayStep, since map[string]int) replayStep {
	st.healthySince = since
	return st
}

func (s *memStore) effectTypes() []string {
	var ts []string
	for _, e := range s.sent {
		ts = append(ts, e.Type+":"+e.ReleaseID)
	}
	return ts
}

type states = map[string]State

// canary is R1's first release: a four-step canary at generation 2 that
// pauses twice and finishes healthy at minute 25.
func canary() []replayStep {
	return []replayStep{
		register(record("R1", "", 0)),
		deliver(fact("R1", PhaseProgressing, 1), 1, OutcomeApplied, states{"R1": StateProgressing}),
		deliver(fact("R1", PhaseProgressing, 2, step(1)), 2, OutcomeApplied, states{"R1": StateProgressing}),
		deliver(fact("R1", PhasePaused, 3, step(1)), 3, OutcomeApplied, states{"R1": StatePaused}),
		deliver(fact("R1", PhaseProgressing, 10, step(2)), 10, OutcomeApplied, states{"R1": StateProgressing}),
		deliver(fact("R1", PhasePaused, 11, step(2)), 11, OutcomeApplied, states{"R1": StatePaused}),
		deliver(fact("R1", PhaseProgressing, 20, step(3)), 20, OutcomeApplied, states{"R1": StateProgressing}),
		deliver(fact("R1", PhaseHealthy, 25, step(4)), 25, OutcomeApplied, states{"R1": StateHealthy}),
	}
}

// release2 rolls R2 out at generation 3 and finishes healthy at minute 45.
func release2() []replayStep {
	return []replayStep{
		register(record("R2", "", 30)),
		deliver(fact("R2", PhaseProgressing, 31, gen(3)), 31, OutcomeApplied, states{"R2": StateProgressing, "R1": StateHealthy}),
		deliver(fact("R2", PhasePaused, 32, gen(3), step(1)), 32, OutcomeApplied, states{"R2": StatePaused}),
		deliver(fact("R2", PhaseHealthy, 45, gen(3), step(4)), 45, OutcomeApplied, states{"R2": StateHealthy, "R1": StateSuperseded}),
	}
}

// replaySequence is one story of facts, with the effects it must emit.
type replaySequence struct {
	name    string
	steps   []replayStep
	effects []string
}

// replaySequences are the realistic fact sequences both replay tests play:
// TestReplay through the pure reducer, TestStoreReplayMatchesTheReducerModel
// through the store on both databases.
func replaySequences() []replaySequence {
	return []replaySequence{
		{
			name:    "canary: progressing and paused through the steps, then healthy",
			steps:   canary(),
			effects: []string{CDEventServiceDeployed + ":R1"},
		},
		{
			name:    "second release supersedes the first",
			steps:   slices.Concat(canary(), release2()),
			effects: []string{CDEventServiceDeployed + ":R1", CDEventServiceUpgraded + ":R2"},
		},
		{
			name: "abort, then a Retry reopens the release and it finishes",
			steps: slices.Concat(canary(), []replayStep{
				register(record("R2", "", 30)),
				deliver(fact("R2", PhaseProgressing, 31, gen(3)), 31, OutcomeApplied, states{"R2": StateProgressing}),
				deliver(fact("R2", PhasePaused, 32, gen(3), step(1)), 32, OutcomeApplied, states{"R2": StatePaused}),
				deliver(fact("R2", PhaseProgressing, 36, gen(3), step(2)), 36, OutcomeApplied, states{"R2": StateProgressing}),
				deliver(fact("R2", PhaseDegraded, 38, gen(3), step(2), aborted()), 38, OutcomeApplied, states{"R2": StateAborted, "R1": StateHealthy}),
				// The retried canary restarts at step 0 with the same
				// generation: its facts have the ids of facts kept before
				// the abort (uid, generation, phase, step), yet the
				// workload showed something else since, so they are not
				// repeats. The first one reopens the release (seed 003).
				deliver(fact("R2", PhaseProgressing, 50, gen(3)), 50, OutcomeApplied, states{"R2": StateProgressing}),
				deliver(fact("R2", PhasePaused, 51, gen(3), step(1)), 51, OutcomeApplied, states{"R2": StatePaused}),
				resync(fact("R2", PhasePaused, 52, gen(3), step(1)), 52, OutcomeDuplicate, states{"R2": StatePaused}),
				deliver(fact("R2", PhaseProgressing, 55, gen(3), step(3)), 55, OutcomeApplied, states{"R2": StateProgressing}),
				deliver(fact("R2", PhaseHealthy, 58, gen(3), step(4)), 58, OutcomeApplied, states{"R2": StateHealthy, "R1": StateSuperseded}),
			}),
			effects: []string{CDEventServiceDeployed + ":R1", CDEventServiceUpgraded + ":R2"},
		},
		{
			name: "scale and restart track phases but are not releases",
			steps: slices.Concat(canary(), []replayStep{
				deliver(fact("R1", PhaseProgressing, 40, gen(3)), 40, OutcomeApplied, states{"R1": StateProgressing}), // scale
				deliver(fact("R1", PhaseHealthy, 41, gen(3)), 41, OutcomeApplied, states{"R1": StateHealthy}),
				deliver(fact("R1", PhaseProgressing, 50, gen(4)), 50, OutcomeApplied, states{"R1": StateProgressing}), // restart
				deliver(fact("R1", PhaseHealthy, 52, gen(4)), 52, OutcomeApplied, states{"R1": StateHealthy}),
			}),
			effects: []string{CDEventServiceDeployed + ":R1"},
		},
		{
			name: "a healthy release loses a pod and recovers: healthy again, no second CDEvent",
			steps: slices.Concat(canary(), []replayStep{
				deliver(fact("R1", PhaseProgressing, 30, step(4)), 30, OutcomeApplied, states{"R1": StateProgressing}),
				// The same observation as minute 25's: the release is
				// healthy again, not a repeat of a fact already applied.
				deliver(fact("R1", PhaseHealthy, 32, step(4)), 32, OutcomeApplied, states{"R1": StateHealthy}),
				resync(fact("R1", PhaseHealthy, 45, step(4)), 45, OutcomeDuplicate, states{"R1": StateHealthy}),
				// A redelivery of the dip, late: older than what the
				// workload showed since, so it changes nothing.
				deliver(fact("R1", PhaseProgressing, 30, step(4)), 46, OutcomeDuplicate, states{"R1": StateHealthy}),
			}),
			effects: []string{CDEventServiceDeployed + ":R1"},
		},
		{
			name: "hand revert to a superseded release is drift, alerted once",
			steps: slices.Concat(canary(), release2(), []replayStep{
				deliver(fact("R1", PhaseProgressing, 60, gen(4)), 60, OutcomeDrift, states{"R1": StateSuperseded, "R2": StateHealthy}),
				deliver(fact("R1", PhaseHealthy, 62, gen(4)), 62, OutcomeIgnored, states{"R1": StateSuperseded, "R2": StateHealthy}),
				// A heartbeat of the first phase: the workload showed Healthy
				// since (its observation follows the ignored fact), so it is
				// no repeat, but a scale or restart that alerts no more.
				deliver(fact("R1", PhaseProgressing, 75, gen(4)), 75, OutcomeIgnored, states{"R1": StateSuperseded, "R2": StateHealthy}),
				deliver(fact("R1", PhaseHealthy, 80, gen(4)), 80, OutcomeIgnored, states{"R1": StateSuperseded, "R2": StateHealthy}),
				// Still running R1, Healthy, reported on every resync: an
				// ignored fact keeps no id, so each copy is ignored again,
				// its story told once.
				resync(fact("R1", PhaseHealthy, 95, gen(4)), 95, OutcomeIgnored, states{"R1": StateSuperseded, "R2": StateHealthy}),
				resync(fact("R1", PhaseHealthy, 110, gen(4)), 110, OutcomeIgnored, states{"R1": StateSuperseded, "R2": StateHealthy}),
			}),
			effects: []string{CDEventServiceDeployed + ":R1", CDEventServiceUpgraded + ":R2", AlertDrift + ":R1"},
		},
		{
			// kubectl argo rollouts undo: the previous pod template comes
			// back, the release-id annotation stays R2's. Drift, alerted
			// once; R2 never turns healthy on R1's image and R1 is not
			// superseded. Rolling forward again is R2 for real.
			name: "rollout undo under the same release id is drift, not healthy",
			steps: slices.Concat(canary(), []replayStep{
				register(record("R2", "", 30)),
				deliver(fact("R2", PhaseProgressing, 31, gen(3)), 31, OutcomeApplied, states{"R2": StateProgressing, "R1": StateHealthy}),
				deliver(fact("R2", PhaseProgressing, 35, gen(4), image(imageOf("R1"))), 35, OutcomeDrift, states{"R2": StateProgressing, "R1": StateHealthy}),
				deliver(fact("R2", PhaseHealthy, 36, gen(4), image(imageOf("R1"))), 36, OutcomeIgnored, states{"R2": StateProgressing, "R1": StateHealthy}),
				// The undone canary's Healthy is the workload's observation
				// now, so its resync is unchanged: no audit event.
				resync(fact("R2", PhaseHealthy, 50, gen(4), image(imageOf("R1"))), 50, OutcomeIgnored, states{"R2": StateProgressing}),
				deliver(fact("R2", PhaseProgressing, 60, gen(5)), 60, OutcomeApplied, states{"R2": StateProgressing}),
				deliver(fact("R2", PhaseHealthy, 62, gen(5)), 62, OutcomeApplied, states{"R2": StateHealthy, "R1": StateSuperseded}),
			}),
			effects: []string{CDEventServiceDeployed + ":R1", AlertDrift + ":R2", CDEventServiceUpgraded + ":R2"},
		},
		{
			name: "facts delivered twice and out of order",
			steps: []replayStep{
				register(record("R1", "", 0)),
				// Healthy sent before the controller saw the spec: not
				// trusted, and not kept, so the real one still counts.
				deliver(fact("R1", PhaseHealthy, 1, step(4), func(f *Fact) { f.ObservedGeneration = 1 }), 1, OutcomeIgnored, states{"R1": StateOpened}),
				deliver(fact("R1", PhaseProgressing, 2), 2, OutcomeApplied, states{"R1": StateProgressing}),
				deliver(fact("R1", PhaseProgressing, 2), 3, OutcomeDuplicate, nil),
				deliver(fact("R1", PhaseHealthy, 9, step(4)), 10, OutcomeApplied, states{"R1": StateHealthy}),
				deliver(fact("R1", PhasePaused, 4, step(1)), 11, OutcomeIgnored, states{"R1": StateHealthy}),
				deliver(fact("R1", PhaseProgressing, 6, step(2)), 12, OutcomeIgnored, states{"R1": StateHealthy}),
				deliver(fact("R1", PhaseHealthy, 24, step(4)), 25, OutcomeDuplicate, states{"R1": StateHealthy}),
			},
			effects: []string{CDEventServiceDeployed + ":R1"},
		},
		{
			name: "rollback release becomes healthy: its target is rolled-back, one service.rolledback",
			steps: slices.Concat(canary(), release2(), []replayStep{
				register(record("R3", "", 60, rollbackOf("R2"), func(r *Record) { r.Image = imageOf("R1") })),
				deliver(fact("R3", PhaseProgressing, 61, gen(5), image(imageOf("R1"))), 61, OutcomeApplied, states{"R3": StateProgressing, "R2": StateHealthy}),
				deliver(fact("R3", PhaseHealthy, 65, gen(5), step(4), image(imageOf("R1"))), 65, OutcomeApplied,
					states{"R3": StateHealthy, "R2": StateRolledBack, "R1": StateSuperseded}),
				// Redelivered: a duplicate, which sends nothing again.
				deliver(fact("R3", PhaseHealthy, 65, gen(5), step(4), image(imageOf("R1"))), 66, OutcomeDuplicate, states{"R2": StateRolledBack}),
				deliver(fact("R3", PhaseProgressing, 90, gen(6), image(imageOf("R1"))), 90, OutcomeApplied, states{"R3": StateProgressing}),
				deliver(fact("R3", PhaseHealthy, 92, gen(6), image(imageOf("R1"))), 92, OutcomeApplied, states{"R3": StateHealthy}),
			}),
			effects: []string{
				CDEventServiceDeployed + ":R1", CDEventServiceUpgraded + ":R2",
				CDEventServiceUpgraded + ":R3", CDEventServiceRolledBack + ":R3",
			},
		},
		{
			// The Healthy fact is delivered after the Degraded one observed
			// later: the state stays degraded, but the release did reach
			// healthy, so healthy_at records when (eligibility counts it)
			// and the next release is an upgrade. The redelivery is a
			// duplicate.
			name: "a Healthy fact delivered after a later Degraded still records healthy_at",
			steps: slices.Concat([]replayStep{
				register(record("R1", "", 0)),
				deliver(fact("R1", PhaseProgressing, 1), 1, OutcomeApplied, states{"R1": StateProgressing}),
				deliver(fact("R1", PhaseDegraded, 20, step(4)), 20, OutcomeApplied, states{"R1": StateDegraded}),
				withHealthySince(deliver(fact("R1", PhaseHealthy, 10, step(4)), 21, OutcomeApplied, states{"R1": StateDegraded}),
					map[string]int{"R1": 10}),
				withHealthySince(deliver(fact("R1", PhaseHealthy, 10, step(4)), 22, OutcomeDuplicate, states{"R1": StateDegraded}),
					map[string]int{"R1": 10}),
				// Later than the Degraded one: healthy for real, and healthy_at
				// keeps the first time.
				withHealthySince(deliver(fact("R1", PhaseHealthy, 23, step(4)), 23, OutcomeApplied, states{"R1": StateHealthy}),
					map[string]int{"R1": 10}),
			}, release2()),
			effects: []string{CDEventServiceDeployed + ":R1", CDEventServiceUpgraded + ":R2"},
		},
		{
			name: "workflow deploy: fails, is re-run, succeeds; the success is redelivered",
			steps: []replayStep{
				deliver(taskFact("d-1", TaskInProgress, 1), 1, OutcomeOpened, states{"d-1": StateProgressing}),
				deliver(taskFact("d-1", TaskFailed, 5, func(f *Fact) { f.FailureType = "health_check_failure" }), 5, OutcomeApplied, states{"d-1": StateFailed}),
				deliver(taskFact("d-1", TaskInProgress, 8, attempt(2)), 8, OutcomeApplied, states{"d-1": StateProgressing}),
				deliver(taskFact("d-1", TaskSuccess, 12, attempt(2)), 12, OutcomeApplied, states{"d-1": StateHealthy}),
				deliver(taskFact("d-1", TaskSuccess, 12, attempt(2)), 13, OutcomeDuplicate, states{"d-1": StateHealthy}),
			},
			effects: []string{CDEventServiceDeployed + ":d-1"},
		},
		{
			name: "workflow deploy: cancelled, redelivered, then re-run and succeeds",
			steps: []replayStep{
				deliver(taskFact("d-1", TaskInProgress, 1), 1, OutcomeOpened, states{"d-1": StateProgressing}),
				deliver(taskFact("d-1", TaskCancelled, 5), 5, OutcomeApplied, states{"d-1": StateAborted}),
				deliver(taskFact("d-1", TaskCancelled, 5), 6, OutcomeDuplicate, states{"d-1": StateAborted}),
				deliver(taskFact("d-1", TaskInProgress, 8, attempt(2)), 8, OutcomeApplied, states{"d-1": StateProgressing}),
				deliver(taskFact("d-1", TaskSuccess, 12, attempt(2)), 12, OutcomeApplied, states{"d-1": StateHealthy}),
			},
			effects: []string{CDEventServiceDeployed + ":d-1"},
		},
		{
			name: "workflow deploy: cancelled before its first fact opens the release aborted",
			steps: []replayStep{
				deliver(taskFact("d-2", TaskCancelled, 2), 2, OutcomeOpened, states{"d-2": StateAborted}),
				deliver(taskFact("d-2", TaskSuccess, 9, attempt(2)), 9, OutcomeApplied, states{"d-2": StateHealthy}),
			},
			effects: []string{CDEventServiceDeployed + ":d-2"},
		},
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	for _, tc := range replaySequences() {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			s.run(tc.steps)
			if got := s.effectTypes(); !slices.Equal(got, tc.effects) {
				t.Errorf("effects sent:\n  %v\nwant\n  %v", got, tc.effects)
			}
		})
	}
}

func TestReplayRolledBackRecordKeepsItsStory(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	s.run(slices.Concat(canary(), release2(), []replayStep{
		register(record("R3", "", 60, rollbackOf("R2"), func(r *Record) { r.Image = imageOf("R1") })),
		deliver(fact("R3", PhaseHealthy, 65, gen(5), image(imageOf("R1"))), 65, OutcomeApplied, states{"R2": StateRolledBack}),
	}))
	if s.recs["R2"].RolledBackBy != "R3" || s.recs["R2"].HealthyAt == nil {
		t.Errorf("R2 = %+v, want rolled_back_by R3 and healthy_at kept", s.recs["R2"])
	}
	var story []AuditType
	for _, e := range s.audit {
		if e.ReleaseID == "R2" {
			story = append(story, e.Type)
		}
	}
	want := []AuditType{AuditReleaseOpened, AuditFactReceived, AuditDeploymentReceived, AuditStateChanged, // Progressing
		AuditFactReceived, AuditStateChanged, // Paused
		AuditFactReceived, AuditStateChanged, // Healthy
		AuditStateChanged} // rolled-back
	if !slices.Equal(story, want) {
		t.Errorf("R2's audit story:\n  %v\nwant\n  %v", story, want)
	}
}
