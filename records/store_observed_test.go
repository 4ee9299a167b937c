package records

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

func TestObservedIsWhatTheWorkloadsReportNow(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		openRelease(t, s, record("R2", "", 10))
		applyFact(t, s, fact("R1", PhaseHealthy, 5, step(4)), "", at(5))
		got, err := s.Observed(context.Background(), []string{"R1", "R2"})
		if err != nil || len(got) != 1 || got[0].ReleaseID != "R1" || got[0].Images[0] != imageOf("R1") {
			t.Fatalf("observed %+v (%v), want the checkout workload running R1", got, err)
		}
		// R2 reaches the workload: R1 runs nowhere any more.
		applyFact(t, s, fact("R2", PhaseProgressing, 11, gen(3)), "", at(11))
		got, err = s.Observed(context.Background(), []string{"R1"})
		if err != nil || len(got) != 0 {
			t.Errorf("observed %+v (%v), want nothing running R1", got, err)
		}
		if got, err := s.Observed(context.Background(), nil); err != nil || got != nil {
			t.Errorf("no ids: %+v %v", got, err)
		}
	})
}

// The agent reports a deleted workload (phase Deleted): its last report
// must not go on claiming that its release runs. A fact observed before the
// deletion, arriving late, does not bring it back; a new workload of the
// same name (another uid) does.
func TestObservedForgetsADeletedWorkload(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		applyFact(t, s, fact("R1", PhaseHealthy, 5, step(4)), "", at(5))
		deleted := fact("R1", Phase("Deleted"), 20)
		if err := deleted.Validate(); err != nil {
			t.Fatalf("a deletion fact is refused: %v", err)
		}
		applyFacts(t, s, []BatchFact{{Fact: deleted, Now: at(20)}}) // the batch path where the database has one
		if got, err := s.Observed(context.Background(), []string{"R1"}); err != nil || len(got) != 0 {
			t.Fatalf("observed %+v (%v) after the workload was deleted, want nothing running R1", got, err)
		}
		applyFact(t, s, fact("R1", PhaseHealthy, 10, step(3)), "", at(21)) // observed before the deletion
		if got, err := s.Observed(context.Background(), []string{"R1"}); err != nil || len(got) != 0 {
			t.Fatalf("observed %+v (%v) after a late fact, want nothing running R1", got, err)
		}
		applyFact(t, s, fact("R1", PhaseHealthy, 30, step(4), func(f *Fact) { f.UID = "recreated-uid" }), "", at(30))
		if got, err := s.Observed(context.Background(), []string{"R1"}); err != nil || len(got) != 1 || got[0].UID != "recreated-uid" {
			t.Errorf("observed %+v (%v), want the recreated workload running R1", got, err)
		}
	})
}

// A Deployment and an Argo Rollout may share a name in one namespace (a
// Rollout that took over a Deployment scaled to 0, as Argo's migration
// guide does it): they are two workloads, and each keeps its own
// observation. Were they one, the scaled-down Deployment's resync of its
// old release would overwrite what the Rollout reports, count as a new
// release arriving rather than a repeat, and a deletion of either would be
// taken for the other's late one.
func TestObservedKeepsADeploymentAndARolloutOfOneNameApart(t *testing.T) {
	t.Parallel()
	deployment := func(f *Fact) { f.Source, f.UID, f.PodHash = SourceDeployment, "deployment-uid", "" }
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		applyFact(t, s, fact("R1", PhaseHealthy, 5, deployment), "", at(5))
		openRelease(t, s, record("R2", "", 10))
		applyFacts(t, s, []BatchFact{{Fact: fact("R2", PhaseProgressing, 11, step(1)), Now: at(11)}})
		// The Deployment's resync: what it said at 5, again.
		res := applyFacts(t, s, []BatchFact{{Fact: fact("R1", PhaseHealthy, 12, deployment), Now: at(12)}})
		if res[0].Outcome != OutcomeDuplicate {
			t.Errorf("the Deployment's resync: outcome %s (%s), want duplicate", res[0].Outcome, res[0].Reason)
		}
		got, err := s.Observed(context.Background(), []string{"R1", "R2"})
		if err != nil {
			t.Fatal(err)
		}
		runs := map[Source]string{}
		for _, o := range got {
			runs[o.Source] = o.ReleaseID
		}
		if len(got) != 2 || runs[SourceDeployment] != "R1" || runs[SourceRollout] != "R2" {
			t.Fatalf("observed %+v, want the Deployment running R1 and the Rollout running R2", got)
		}
		// The Rollout is deleted: the Deployment still runs R1.
		applyFacts(t, s, []BatchFact{{Fact: fact("R2", PhaseDeleted, 20, step(1)), Now: at(20)}})
		running, err := s.Running(context.Background(), "prod-eu")
		if err != nil || len(running) != 1 || running[0].Source != SourceDeployment || running[0].ReleaseID != "R1" {
			t.Errorf("running %+v (%v) after the Rollout's deletion, want the Deployment running R1 only", running, err)
		}
	})
}

// An observation stored before migration 16 without a source stays under
// its old key (cluster/namespace/name): the next fact of a workload of that
// name still finds it, so a resync of a release closed long ago (superseded) is the
// scale or restart it is rather than drift, and its observation replaces
// the old one instead of standing beside it.
func TestObservationStoredWithoutASourceIsFoundAndReplaced(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		putRecord(t, s, record("R1", StateSuperseded, 0, healthyAt(1)))
		old := observe(fact("R1", PhaseHealthy, 5))
		old.Source = ""
		body, _ := json.Marshal(old)
		if _, err := s.db.Write.Exec(`INSERT INTO observations (key, release_id, observed_at, body) VALUES ($1, $2, $3, $4)`,
			"prod-eu/checkout/checkout", "R1", store.Micros(old.ObservedAt), string(body)); err != nil {
			t.Fatal(err)
		}
		res := applyFacts(t, s, []BatchFact{{Fact: fact("R1", PhaseHealthy, 30), Now: at(30)}})
		if res[0].Outcome != OutcomeIgnored {
			t.Errorf("a resync of R1 after the upgrade: outcome %s (%s), want ignored as a scale or restart", res[0].Outcome, res[0].Reason)
		}
		openRelease(t, s, record("R2", "", 31))
		res = applyFacts(t, s, []BatchFact{{Fact: fact("R2", PhaseProgressing, 32, gen(3)), Now: at(32)}})
		running, err := s.Running(context.Background(), "prod-eu")
		if err != nil || len(running) != 1 || running[0].Source != SourceRollout || running[0].ReleaseID != "R2" {
			t.Errorf("running %+v (%v), want one observation, the Rollout running R2 (outcome %s: %s)", running, err, res[0].Outcome, res[0].Reason)
		}
	})
}

// A release that changes only the workload's release id annotation (the
// same image released again: the pod template, and so the generation, stay
// as they were) reaches its record. Its facts have the ids of the previous
// release's, which a cluster fact's id leaves out, but they are no repeat.
func TestAReleaseThatOnlyChangesTheAnnotationReachesItsRecord(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("R1", "", 0))
		applyFact(t, s, fact("R1", PhaseHealthy, 5, step(4)), "", at(5))
		openRelease(t, s, record("R2", "", 10, func(r *Record) { r.Image = imageOf("R1") }))
		res := applyFacts(t, s, []BatchFact{{Fact: fact("R2", PhaseHealthy, 11, step(4), image(imageOf("R1"))), Now: at(11)}})
		if res[0].Outcome != OutcomeApplied {
			t.Errorf("R2's first fact: outcome %s (%s), want applied", res[0].Outcome, res[0].Reason)
		}
		if got := mustGet(t, s, "R2"); got.State != StateHealthy {
			t.Errorf("R2 is %s, want healthy", got.State)
		}
		if got, err := s.Observed(context.Background(), []string{"R2"}); err != nil || len(got) != 1 {
			t.Errorf("observed %+v (%v), want the workload running R2", got, err)
		}
		// Its resync is a repeat.
		res = applyFacts(t, s, []BatchFact{{Fact: fact("R2", PhaseHealthy, 12, step(4), image(imageOf("R1"))), Now: at(12)}})
		if res[0].Outcome != OutcomeDuplicate {
			t.Errorf("R2's resync: outcome %s (%s), want duplicate", res[0].Outcome, res[0].Reason)
		}
	})
}

// oneFactOrABatch applies a fact alone (ApplyFact) or as a batch of one
// (ApplyFacts): the two paths the intake takes must agree.
var oneFactOrABatch = map[string]func(t *testing.T, s *Store, f Fact, now time.Time) Result{
	"one fact": func(t *testing.T, s *Store, f Fact, now time.Time) Result { return applyFact(t, s, f, "", now) },
	"a batch": func(t *testing.T, s *Store, f Fact, now time.Time) Result {
		return applyFacts(t, s, []BatchFact{{Fact: f, Now: now}})[0]
	},
}

// A Deployment a Rollout took over is reported deleted (the agent leaves
// it out of its inventory); the Rollout's release supersedes the
// Deployment's. Released by the Rollout, the Deployment reports its
// release again: a scale or restart of a closed record, which moves
// nothing, but the Deployment runs that release once more, and the server
// must see it running rather than deleted.
func TestAWorkloadReportedAgainRunsItsClosedRelease(t *testing.T) {
	t.Parallel()
	deployment := func(f *Fact) { f.Source, f.UID, f.PodHash = SourceDeployment, "deployment-uid", "" }
	for name, apply := range oneFactOrABatch {
		t.Run(name, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, dbURL string) {
				s, _ := openStore(t, dbURL)
				openRelease(t, s, record("R1", "", 0))
				applyFact(t, s, fact("R1", PhaseHealthy, 5, deployment), "", at(5))
				applyFact(t, s, fact("R1", PhaseDeleted, 10, deployment), "", at(10)) // the inventory
				openRelease(t, s, record("R2", "", 11))
				applyFact(t, s, fact("R2", PhaseHealthy, 12, step(4)), "", at(12))
				if got := mustGet(t, s, "R1"); got.State != StateSuperseded {
					t.Fatalf("R1 is %s once R2 is healthy, want superseded", got.State)
				}
				before := mustGet(t, s, "R1")

				res := apply(t, s, fact("R1", PhaseDegraded, 20, deployment), at(20))
				if res.Outcome != OutcomeIgnored || res.ReleaseEvent {
					t.Errorf("the Deployment reported again: outcome %s (%s), release event %v; want ignored as a scale or restart",
						res.Outcome, res.Reason, res.ReleaseEvent)
				}
				sameRecord(t, mustGet(t, s, "R1"), before)
				running, err := s.Running(context.Background(), "prod-eu")
				if err != nil {
					t.Fatal(err)
				}
				runs := map[Source]Observation{}
				for _, o := range running {
					runs[o.Source] = o
				}
				if d, ok := runs[SourceDeployment]; len(running) != 2 || !ok || d.ReleaseID != "R1" || d.Phase != PhaseDegraded || !d.ObservedAt.Equal(at(20)) {
					t.Errorf("running %+v; want the Deployment running R1, Degraded as reported at 20, beside the Rollout", running)
				}
				// A fact observed before that one, arriving late, changes nothing.
				apply(t, s, fact("R1", PhaseHealthy, 15, deployment), at(21))
				if got, err := s.Observed(context.Background(), []string{"R1"}); err != nil || len(got) != 1 || got[0].Phase != PhaseDegraded {
					t.Errorf("observed %+v (%v) after a late fact, want the Deployment Degraded", got, err)
				}
			})
		})
	}
}

// kubectl argo rollouts undo keeps R2's release id on R1's image: drift,
// reported once. The undone canary then goes Healthy, and the agent
// re-sends that on every resync. The workload is Healthy for the server,
// as it reports, and the resyncs, ignored like the Healthy they repeat,
// add nothing to the audit trail.
func TestAnUndoneCanaryIsObservedAsItReportsAndItsResyncsAreNotAudited(t *testing.T) {
	t.Parallel()
	for name, apply := range oneFactOrABatch {
		t.Run(name, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, dbURL string) {
				s, _ := openStore(t, dbURL)
				openRelease(t, s, record("R2", "", 10))
				apply(t, s, fact("R2", PhaseProgressing, 11, gen(3)), at(11))
				if res := apply(t, s, fact("R2", PhaseProgressing, 15, gen(4), image(imageOf("R1"))), at(15)); res.Outcome != OutcomeDrift {
					t.Fatalf("the undo: outcome %s (%s), want drift", res.Outcome, res.Reason)
				}
				if res := apply(t, s, fact("R2", PhaseHealthy, 16, gen(4), image(imageOf("R1"))), at(16)); res.Outcome != OutcomeIgnored {
					t.Fatalf("the undone canary Healthy: outcome %s (%s), want ignored", res.Outcome, res.Reason)
				}
				got, err := s.Observed(context.Background(), []string{"R2"})
				if err != nil || len(got) != 1 || got[0].Phase != PhaseHealthy || !got[0].ObservedAt.Equal(at(16)) || got[0].Images[0] != imageOf("R1") {
					t.Fatalf("observed %+v (%v), want the workload Healthy on R1's image as reported at 16", got, err)
				}
				events := count(t, s, `SELECT COUNT(*) FROM audit_events`)
				for _, m := range []int{31, 46, 61} {
					res := apply(t, s, fact("R2", PhaseHealthy, m, gen(4), image(imageOf("R1"))), at(m))
					if res.Outcome != OutcomeIgnored || res.Reason == "" {
						t.Errorf("resync at %d: outcome %s (%q), want ignored with its reason", m, res.Outcome, res.Reason)
					}
				}
				if n := count(t, s, `SELECT COUNT(*) FROM audit_events`); n != events {
					t.Errorf("three resyncs wrote %d audit events, want none", n-events)
				}
				if got, err := s.Observed(context.Background(), []string{"R2"}); err != nil || len(got) != 1 || !got[0].ObservedAt.Equal(at(61)) {
					t.Errorf("observed %+v (%v), want the last resync's time", got, err)
				}
				if r := mustGet(t, s, "R2"); r.State != StateProgressing {
					t.Errorf("R2 is %s, want still progressing: the undone canary is not the release", r.State)
				}
			})
		})
	}
}
