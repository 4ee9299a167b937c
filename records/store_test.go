package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

func TestStoreAppliesEachKindOfFact(t *testing.T) {
	t.Parallel()
	source := func(s Source) func(*Fact) { return func(f *Fact) { f.Source = s } }
	cases := []struct {
		name    string
		open    []Record
		fact    Fact
		outcome Outcome
		rel     string
		state   State
	}{
		{"rollout fact moves an opened release to progressing", []Record{record("R1", "", 0)},
			fact("R1", PhaseProgressing, 1), OutcomeApplied, "R1", StateProgressing},
		{"deployment fact reaching healthy sets healthy_at", []Record{record("R1", "", 0)},
			fact("R1", PhaseHealthy, 1, source(SourceDeployment)), OutcomeApplied, "R1", StateHealthy},
		{"argocd sync failure fails the release", []Record{record("R1", "", 0)},
			fact("R1", PhaseSyncFailed, 1, source(SourceArgoCD)), OutcomeApplied, "R1", StateFailed},
		{"task fact opens a release never registered", nil,
			taskFact("d-1", TaskInProgress, 1), OutcomeOpened, "d-1", StateProgressing},
		{"task fact naming no cluster joins the release registered for one", []Record{record("R1", "", 0)},
			taskFact("R1", TaskSuccess, 1, func(f *Fact) { f.Cluster = "" }), OutcomeApplied, "R1", StateHealthy},
		{"cluster fact joins a release registered without a cluster", []Record{record("R1", "", 0, func(r *Record) { r.Cluster = "" })},
			fact("R1", PhaseProgressing, 1), OutcomeApplied, "R1", StateProgressing},
		{"task fact without release_id is joined by deployment_id", nil,
			taskFact("", TaskSuccess, 1, func(f *Fact) { f.DeploymentID = "dep-42" }), OutcomeOpened, "dep-42", StateHealthy},
	}
	testdb.Each(t, func(t *testing.T, dbURL string) {
		// One database per engine: tables are emptied between cases.
		s, _ := openStore(t, dbURL)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				truncate(t, s)
				for _, r := range c.open {
					openRelease(t, s, r)
				}
				res := applyFact(t, s, c.fact, "delivery-1", at(2))
				if res.Outcome != c.outcome {
					t.Fatalf("outcome %s (%s), want %s", res.Outcome, res.Reason, c.outcome)
				}
				got := mustGet(t, s, c.rel)
				sameRecord(t, got, res.Records[0])
				if got.State != c.state || got.LastFactAt == nil || !got.LastFactAt.Equal(at(1)) {
					t.Errorf("%s stored as %s with last_fact_at %v, want %s at %s", c.rel, got.State, got.LastFactAt, c.state, at(1))
				}
				if n := count(t, s, `SELECT COUNT(*) FROM facts WHERE id = $1 AND release_id = $2`, res.FactID, c.rel); n != 1 {
					t.Errorf("fact %s kept %d times, want once", res.FactID, n)
				}
				if n := count(t, s, `SELECT COUNT(*) FROM audit_events WHERE fact_id = $1 AND delivery_id = 'delivery-1'`, res.FactID); n != len(res.Audit) {
					t.Errorf("%d audit events stored for the fact, want the result's %d", n, len(res.Audit))
				}
				checkObservation(t, s, c.fact, res)
			})
		}
	})
}

// truncate empties the store's tables so cases can share a database.
func truncate(t testing.TB, s *Store) {
	for _, table := range []string{"records", "facts", "observations", "audit_events"} {
		if _, err := s.db.Write.Exec(`DELETE FROM ` + table); err != nil {
			t.Fatal(err)
		}
	}
}

func checkObservation(t *testing.T, s *Store, f Fact, res Result) {
	t.Helper()
	var got *Observation
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		got, err = getObservation(context.Background(), tx, f.WorkloadKey())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, res.Observation) {
		t.Errorf("observation of %s stored as %+v, want %+v", f.WorkloadKey(), got, res.Observation)
	}
}

func TestStoreRepeatedFactIsADuplicateAndChangesNothing(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		first := applyFact(t, s, fact("R1", PhaseProgressing, 1), "d1", at(1))
		before := mustGet(t, s, "R1")
		events := count(t, s, `SELECT COUNT(*) FROM audit_events`)
		again := applyFact(t, s, fact("R1", PhaseProgressing, 1), "d2", at(5))
		if again.Outcome != OutcomeDuplicate || again.FactID != first.FactID {
			t.Fatalf("second delivery: outcome %s, fact %s; want duplicate of %s", again.Outcome, again.FactID, first.FactID)
		}
		sameRecord(t, mustGet(t, s, "R1"), before)
		if n := count(t, s, `SELECT COUNT(*) FROM audit_events`); n != events {
			t.Errorf("duplicate wrote %d audit events", n-events)
		}
	})
}

func TestStoreIgnoredFactIsNotKeptSoItCanCountLater(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		lagging := fact("R1", PhaseHealthy, 1, func(f *Fact) { f.ObservedGeneration = 1 })
		res := applyFact(t, s, lagging, "d1", at(1))
		if res.Outcome != OutcomeIgnored {
			t.Fatalf("outcome %s, want ignored", res.Outcome)
		}
		if n := count(t, s, `SELECT COUNT(*) FROM facts`); n != 0 {
			t.Errorf("ignored fact kept (%d rows)", n)
		}
		if n := count(t, s, `SELECT COUNT(*) FROM audit_events WHERE type = 'fact_ignored' AND release_id = 'R1'`); n != 1 {
			t.Errorf("%d fact_ignored events, want 1", n)
		}
		// Same id once the controller caught up: it counts.
		if res := applyFact(t, s, fact("R1", PhaseHealthy, 2), "d2", at(2)); res.Outcome != OutcomeApplied {
			t.Errorf("caught-up fact: outcome %s (%s), want applied", res.Outcome, res.Reason)
		}
	})
}

func TestStoreHealthyReleaseSupersedesItsSiblings(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		applyFact(t, s, fact("R1", PhaseHealthy, 1), "", at(1))
		openRelease(t, s, record("R2", "", 10))
		// Another target's open release must not be touched.
		openRelease(t, s, record("X1", "", 5, func(r *Record) { r.Cluster = "prod-us" }))
		res := applyFact(t, s, fact("R2", PhaseHealthy, 12, gen(3)), "", at(12))
		want := map[string]State{"R1": StateSuperseded, "R2": StateHealthy, "X1": StateOpened}
		if got := storedStates(t, s, "R1", "R2", "X1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("states %v, want %v", got, want)
		}
		sameRecord(t, mustGet(t, s, "R1"), recordOf(t, res, "R1"))
		if r1 := mustGet(t, s, "R1"); r1.HealthyAt == nil || !r1.HealthyAt.Equal(at(1)) {
			t.Errorf("superseded R1 lost healthy_at: %v", r1.HealthyAt)
		}
		if got := effectTypes(res); !slices.Equal(got, []string{CDEventServiceUpgraded}) {
			t.Errorf("effects %v, want service.upgraded (R1 was healthy before)", got)
		}
	})
}

func TestStoreDriftIsAuditedAndAlerted(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		res := applyFact(t, s, fact("R9", PhaseProgressing, 1), "delivery-7", at(1))
		if res.Outcome != OutcomeDrift || len(res.Effects) != 1 || res.Effects[0].Type != AlertDrift {
			t.Fatalf("outcome %s, effects %v; want drift with one alert", res.Outcome, effectTypes(res))
		}
		evs, err := s.Audit(context.Background(), AuditFilter{Type: AuditDriftDetected})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].ReleaseID != "R9" || evs[0].DeliveryID != "delivery-7" || evs[0].FactID != res.FactID {
			t.Fatalf("drift events %+v, want one for R9 from delivery-7", evs)
		}
		if evs[0].Data["workload"] != "checkout/checkout" {
			t.Errorf("drift event data %v, want the workload", evs[0].Data)
		}
		// The same workload heartbeating the drifted release alerts no
		// second time. It is ignored, not a duplicate: a fact matching no
		// record is not kept, so the heartbeat reaches the record once one
		// is opened (TestResyncReachesARecordOpenedAfterItsFirstFact).
		again := applyFact(t, s, fact("R9", PhaseProgressing, 1), "delivery-8", at(3))
		if again.Outcome != OutcomeIgnored || len(again.Effects) != 0 || len(again.Audit) != 0 {
			t.Errorf("repeat of drift fact: %s with effects %v and %d audit events, want ignored with none",
				again.Outcome, effectTypes(again), len(again.Audit))
		}
	})
}

func TestStoreRoundTripsEveryRecordField(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		flow := time.Date(2026, 10, 10, 8, 59, 1, 123456789, time.FixedZone("CEST", 7200))
		r := record("R2", "", 0, rollbackOf("R1"), func(r *Record) {
			r.Digest = digestOf("R2")
			r.GitRevision, r.ConfigRevision = "1a2b3c4d", "5e6f7a8b"
			r.PRURL, r.PRNumber = "https://github.com/acme/checkout/pull/7", 7
			r.FlowStartedAt = &flow
		})
		opened := openRelease(t, s, r)
		if opened.FlowStartedAt == nil || !opened.FlowStartedAt.Equal(flow.Truncate(time.Microsecond)) {
			t.Errorf("flow_started_at %v, want %v at microseconds", opened.FlowStartedAt, flow)
		}
		sameRecord(t, mustGet(t, s, "R2"), opened)
		if _, err := s.Get(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of an unknown release: %v, want ErrNotFound", err)
		}
	})
}

func TestStoreEverHealthyCountsClosedReleases(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		// The only release that was ever healthy here is closed now, so no
		// open sibling tells the reducer; the store must.
		putRecord(t, s, record("R1", StateRolledBack, 0, healthyAt(1)))
		openRelease(t, s, record("R2", "", 10))
		res := applyFact(t, s, fact("R2", PhaseHealthy, 12), "", at(12))
		if got := effectTypes(res); !slices.Equal(got, []string{CDEventServiceUpgraded}) {
			t.Errorf("effects %v, want service.upgraded: the target was healthy before", got)
		}
	})
}

// getObservation reads the stored observation of a workload; nil when none.
func getObservation(ctx context.Context, tx *sql.Tx, key string) (*Observation, error) {
	var body []byte
	err := tx.QueryRowContext(ctx, `SELECT body FROM observations WHERE key = $1`, key).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read observation of %s: %w", key, err)
	}
	var o Observation
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, fmt.Errorf("read observation of %s: %w", key, err)
	}
	return &o, nil
}
