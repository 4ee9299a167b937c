package records

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// replaySequence is one of TestReplay's stories.
type replaySequence struct {
	name  string
	steps []replayStep
}

// replaySequences are TestReplay's stories, step for step (the table there
// is inline, so it is repeated here).
func replaySequences() []replaySequence {
	return []replaySequence{
		{
			name:  "canary: progressing and paused through the steps, then healthy",
			steps: canary(),
		},
		{
			name:  "second release supersedes the first",
			steps: slices.Concat(canary(), release2()),
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
				// generation: its first facts repeat ids already kept
				// before the abort (uid, generation, phase, step), so
				// they are duplicates. The first step it had not reached
				// before reopens it.
				deliver(fact("R2", PhaseProgressing, 50, gen(3)), 50, OutcomeDuplicate, states{"R2": StateAborted}),
				deliver(fact("R2", PhasePaused, 51, gen(3), step(1)), 51, OutcomeDuplicate, states{"R2": StateAborted}),
				deliver(fact("R2", PhaseProgressing, 55, gen(3), step(3)), 55, OutcomeApplied, states{"R2": StateProgressing}),
				deliver(fact("R2", PhaseHealthy, 58, gen(3), step(4)), 58, OutcomeApplied, states{"R2": StateHealthy, "R1": StateSuperseded}),
			}),
		},
		{
			name: "scale and restart track phases but are not releases",
			steps: slices.Concat(canary(), []replayStep{
				deliver(fact("R1", PhaseProgressing, 40, gen(3)), 40, OutcomeApplied, states{"R1": StateProgressing}), // scale
				deliver(fact("R1", PhaseHealthy, 41, gen(3)), 41, OutcomeApplied, states{"R1": StateHealthy}),
				deliver(fact("R1", PhaseProgressing, 50, gen(4)), 50, OutcomeApplied, states{"R1": StateProgressing}), // restart
				deliver(fact("R1", PhaseHealthy, 52, gen(4)), 52, OutcomeApplied, states{"R1": StateHealthy}),
			}),
		},
		{
			name: "hand revert to a superseded release is drift, alerted once",
			steps: slices.Concat(canary(), release2(), []replayStep{
				deliver(fact("R1", PhaseProgressing, 60, gen(4)), 60, OutcomeDrift, states{"R1": StateSuperseded, "R2": StateHealthy}),
				deliver(fact("R1", PhaseHealthy, 62, gen(4)), 62, OutcomeIgnored, states{"R1": StateSuperseded, "R2": StateHealthy}),
				deliver(fact("R1", PhaseProgressing, 75, gen(4)), 75, OutcomeDuplicate, nil), // heartbeat
			}),
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
		},
		{
			name: "rollback release becomes healthy: its target is rolled-back, one service.rolledback",
			steps: slices.Concat(canary(), release2(), []replayStep{
				register(record("R3", "", 60, rollbackOf("R2"), func(r *Record) { r.Image = imageOf("R1") })),
				deliver(fact("R3", PhaseProgressing, 61, gen(5), image(imageOf("R1"))), 61, OutcomeApplied, states{"R3": StateProgressing, "R2": StateHealthy}),
				deliver(fact("R3", PhaseHealthy, 65, gen(5), step(4), image(imageOf("R1"))), 65, OutcomeApplied,
					states{"R3": StateHealthy, "R2": StateRolledBack, "R1": StateSuperseded}),
				deliver(fact("R3", PhaseProgressing, 90, gen(6), image(imageOf("R1"))), 90, OutcomeApplied, states{"R3": StateProgressing}),
				deliver(fact("R3", PhaseHealthy, 92, gen(6), image(imageOf("R1"))), 92, OutcomeApplied, states{"R3": StateHealthy}),
			}),
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
		},
	}
}

// TestStoreReplayMatchesTheReducerModel plays TestReplay's stories through
// the store and, side by side, through memStore, the in-memory model of how
// a store must load an Input and save a Result. Every step's Result must be
// the model's, so the store loads the same duplicates, observations,
// records, siblings and ever-healthy; and at the end the stored records
// and audit trail must be the model's.
func TestStoreReplayMatchesTheReducerModel(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		for _, seq := range replaySequences() {
			t.Run(seq.name, func(t *testing.T) {
				truncate(t, s)
				model := newStore(t)
				for i, st := range seq.steps {
					if st.open != nil {
						model.open(*st.open)
						openRelease(t, s, *st.open)
						continue
					}
					want := model.play(st.fact, at(st.now))
					got := applyFact(t, s, st.fact, "", at(st.now))
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d (%s at minute %d): the store's result differs from the model's:\n  store %+v\n  model %+v",
							i, describeFact(st.fact), st.now, got, want)
					}
					if got.Outcome != st.want {
						t.Fatalf("step %d (%s at minute %d): outcome %s (%s), want %s", i, describeFact(st.fact), st.now, got.Outcome, got.Reason, st.want)
					}
					for rel, state := range st.states {
						if stored := mustGet(t, s, rel).State; stored != state {
							t.Fatalf("step %d: %s stored %s, want %s", i, rel, stored, state)
						}
					}
				}
				for rel, r := range model.recs {
					sameRecord(t, mustGet(t, s, rel), r)
				}
				stored, err := s.Audit(context.Background(), AuditFilter{Oldest: true, Limit: 10000})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := auditLines(stored), auditLines(model.audit); !slices.Equal(got, want) {
					t.Errorf("stored audit trail:\n  %v\nmodel's:\n  %v", got, want)
				}
			})
		}
	})
}

func auditLines(evs []AuditEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type)+" "+e.ReleaseID+": "+e.Message)
	}
	return out
}
