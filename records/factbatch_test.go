package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// TestApplyFactsMatchesApplyFactOnTheReplays plays TestReplay's stories
// through ApplyFact one fact at a time and through ApplyFacts in batches
// of 2, 3 and everything between two registrations, so that facts about
// one release land in one batch and depend on each other.
func TestApplyFactsMatchesApplyFactOnTheReplays(t *testing.T) {
	t.Parallel()
	tw := newTwinStores(t)
	for _, seq := range replaySequences() {
		for _, size := range []int{2, 3, 1000} {
			t.Run(fmt.Sprintf("%s/batches of %d", seq.name, size), func(t *testing.T) {
				tw.play(t, batched(seq.steps, size))
			})
		}
	}
}

// TestApplyFactsOfOneBatchSeeEachOther: each case is a batch whose facts
// depend on what the earlier ones of the same batch did.
func TestApplyFactsOfOneBatchSeeEachOther(t *testing.T) {
	t.Parallel()
	tw := newTwinStores(t)
	other := func(f *Fact) { f.Cluster, f.UID = "prod-us", "us-uid" }
	cases := []struct {
		name  string
		steps []batchStep
		check func(t *testing.T, results [][]Result)
	}{{
		name: "a task fact opens a release that the cluster's facts then move to healthy",
		steps: []batchStep{deliverAll(outcomes(OutcomeOpened, OutcomeApplied, OutcomeApplied, OutcomeApplied),
			taskFact("d-1", TaskInProgress, 1),
			// The workflow deployed version v1a2b3c4-1760000000: the
			// cluster runs that tag.
			fact("d-1", PhaseProgressing, 2, image("ghcr.io/acme/checkout:v1a2b3c4-1760000000")),
			fact("d-1", PhaseHealthy, 3, step(4), image("ghcr.io/acme/checkout:v1a2b3c4-1760000000")),
			taskFact("d-1", TaskSuccess, 4))},
		check: func(t *testing.T, results [][]Result) {
			if got := effectTypes(results[0][2]); !slices.Equal(got, []string{CDEventServiceDeployed}) {
				t.Errorf("the first healthy fact's effects: %v, want one service.deployed", got)
			}
		},
	}, {
		name: "the same fact twice in one batch: the second is a duplicate",
		steps: []batchStep{registered(record("R1", "", 0)),
			deliverAll(outcomes(OutcomeApplied, OutcomeDuplicate), fact("R1", PhaseProgressing, 1), fact("R1", PhaseProgressing, 1))},
	}, {
		name: "an ignored fact twice in one batch: its id is not kept, so both are ignored",
		steps: []batchStep{registered(record("R1", "", 0)),
			deliverAll(outcomes(OutcomeIgnored, OutcomeIgnored, OutcomeApplied),
				fact("R1", PhaseHealthy, 1, func(f *Fact) { f.ObservedGeneration = 1 }),
				fact("R1", PhaseHealthy, 1, func(f *Fact) { f.ObservedGeneration = 1 }),
				fact("R1", PhaseProgressing, 2))},
	}, {
		name: "a newer release healthy in the batch supersedes a sibling healthy earlier in it; the sibling's next fact is drift",
		steps: []batchStep{registered(record("R1", "", 0)), registered(record("R2", "", 30)),
			deliverAll(outcomes(OutcomeApplied, OutcomeApplied, OutcomeApplied, OutcomeApplied, OutcomeDrift, OutcomeDrift),
				fact("R1", PhaseProgressing, 1),
				fact("R1", PhaseHealthy, 5, step(4)),
				fact("R2", PhaseProgressing, 31, gen(3)),
				fact("R2", PhaseHealthy, 35, gen(3), step(4)),
				fact("R1", PhaseProgressing, 40, gen(4)),
				fact("R9", PhaseProgressing, 41, other))},
		check: func(t *testing.T, results [][]Result) {
			r2 := results[2][3]
			if got := effectTypes(r2); !slices.Equal(got, []string{CDEventServiceUpgraded}) {
				t.Errorf("R2 healthy after R1 was healthy in the same batch: effects %v, want service.upgraded", got)
			}
			if got := releaseIDs(r2.Records); !slices.Equal(got, []string{"R2=healthy", "R1=superseded"}) {
				t.Errorf("R2 healthy saves %v, want R2 healthy and R1 superseded", got)
			}
		},
	}, {
		name: "a rollback opened earlier is healthy in the batch that moved its target: the target is rolled-back",
		steps: []batchStep{registered(record("R1", "", 0)),
			deliverAll(outcomes(OutcomeApplied, OutcomeApplied), fact("R1", PhaseProgressing, 1), fact("R1", PhasePaused, 2, step(1))),
			registered(record("R3", "", 10, rollbackOf("R1"), func(r *Record) { r.Image = imageOf("R0") })),
			deliverAll(outcomes(OutcomeApplied, OutcomeApplied, OutcomeIgnored),
				fact("R1", PhaseDegraded, 11, step(1)),
				fact("R3", PhaseHealthy, 12, gen(3), image(imageOf("R0"))),
				fact("R1", PhaseDegraded, 11, step(2)))},
	}, {
		name: "a target healthy only in its closed history: the first healthy release of the batch is an upgrade",
		steps: []batchStep{stored(record("R0", StateSuperseded, 0, healthyAt(5), lastFact(5))), registered(record("R1", "", 10)),
			deliverAll(outcomes(OutcomeApplied, OutcomeApplied), fact("R1", PhaseProgressing, 11), fact("R1", PhaseHealthy, 12, step(4)))},
		check: func(t *testing.T, results [][]Result) {
			if got := effectTypes(results[2][1]); !slices.Equal(got, []string{CDEventServiceUpgraded}) {
				t.Errorf("R1 healthy where superseded R0 was healthy: effects %v, want service.upgraded", got)
			}
		},
	}, {
		name: "a workload's observation replaced twice in one batch: a scale after the release is not a release",
		steps: []batchStep{registered(record("R1", "", 0)),
			deliverAll(outcomes(OutcomeApplied, OutcomeApplied, OutcomeApplied),
				fact("R1", PhaseProgressing, 1),
				fact("R1", PhaseHealthy, 2, step(4)),
				fact("R1", PhaseProgressing, 3, gen(3)))},
		check: func(t *testing.T, results [][]Result) {
			if results[1][2].ReleaseEvent {
				t.Error("a scale of the release the batch just observed counts as a release event")
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			results := tw.play(t, tc.steps)
			if tc.check != nil {
				tc.check(t, results)
			}
		})
	}
}

// TestApplyFactsLeavesAReleaseOfAnUnlockedClusterToApplyFact: a task fact
// that names no cluster for a release in prod-eu, in a batch that names
// no prod-eu fact, would change a record whose cluster is not locked. The
// batch path writes nothing and says so; ApplyFact then applies it in the
// same transaction.
func TestApplyFactsLeavesAReleaseOfAnUnlockedClusterToApplyFact(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, testdb.URL(t, "postgres"))
	openRelease(t, s, record("R1", "", 0))
	f := taskFact("R1", TaskSuccess, 5, func(f *Fact) { f.Cluster = "" })
	batchGivesUpToApplyFact(t, s, f, at(5))
	if got := mustGet(t, s, "R1").State; got != StateHealthy {
		t.Errorf("R1 is %s, want healthy", got)
	}
}

// batchGivesUpToApplyFact checks that ApplyFacts refuses f with
// ErrBatchUnsupported, having kept no fact, and that ApplyFact then applies
// it in the same transaction, as app/factcommit.go does.
func batchGivesUpToApplyFact(t *testing.T, s *Store, f Fact, now time.Time) {
	t.Helper()
	ctx := context.Background()
	facts := count(t, s, `SELECT count(*) FROM facts`)
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		_, err := s.ApplyFacts(ctx, tx, []BatchFact{{Fact: f, Now: now}})
		if !errors.Is(err, ErrBatchUnsupported) {
			t.Fatalf("ApplyFacts: %v, want ErrBatchUnsupported", err)
		}
		var kept int
		if err := tx.QueryRow(`SELECT count(*) FROM facts`).Scan(&kept); err != nil {
			return err
		}
		if kept != facts {
			t.Errorf("ApplyFacts kept %d facts before giving up, want none", kept-facts)
		}
		res, err := s.ApplyFact(ctx, tx, f, "", now)
		if err == nil && res.Outcome != OutcomeApplied {
			t.Errorf("ApplyFact after the batch path gave up: %s (%s), want applied", res.Outcome, res.Reason)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A workload back at a phase it showed before (a healthy release that lost
// a pod) sends a fact whose id is stored: the batch read left out its
// release, so the batch goes to ApplyFact, which applies it.
func TestApplyFactsLeavesAWorkloadBackAtAnEarlierPhaseToApplyFact(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, testdb.URL(t, "postgres"))
	openRelease(t, s, record("R1", "", 0))
	for _, f := range []Fact{fact("R1", PhaseHealthy, 1), fact("R1", PhaseProgressing, 2)} {
		applyFact(t, s, f, "", f.ObservedAt)
	}
	batchGivesUpToApplyFact(t, s, fact("R1", PhaseHealthy, 3), at(3))
	if got := mustGet(t, s, "R1").State; got != StateHealthy {
		t.Errorf("R1 is %s, want healthy again", got)
	}
}

func TestApplyFactsOnSQLiteLeavesTheFactsToApplyFact(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, testdb.URL(t, "sqlite"))
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
		_, err := s.ApplyFacts(context.Background(), tx, []BatchFact{{Fact: fact("R1", PhaseProgressing, 1), Now: at(1)}})
		return err
	})
	if !errors.Is(err, ErrBatchUnsupported) {
		t.Errorf("ApplyFacts on SQLite: %v, want ErrBatchUnsupported (its path is ApplyFact's)", err)
	}
}

// A record the batch changes must be updated by the write: one that is
// gone by then is an error, as it is for ApplyFact.
func TestApplyFactsWriteOfAReleaseThatIsGoneFails(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, testdb.URL(t, "postgres"))
	openRelease(t, s, record("R1", "", 0))
	ov := newBatchOverlay()
	for _, rel := range []string{"R1", "R2"} {
		ov.recs[rel] = record(rel, StateProgressing, 0, lastFact(1))
		ov.recOrder = append(ov.recOrder, rel)
	}
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error { return s.writeBatch(context.Background(), tx, ov) })
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "R2") {
		t.Errorf("writing R1 and R2 where only R1 exists: %v, want ErrNotFound naming R2", err)
	}
}
