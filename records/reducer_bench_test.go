package records

import "testing"

// BenchmarkReduce measures the pure reducer on the expensive path: a
// Healthy fact that closes four siblings and emits CDEvents.
func BenchmarkReduce(b *testing.B) {
	siblings := []Record{
		record("R0", StateHealthy, -40, healthyAt(-35)),
		record("Ra", StateAborted, -30),
		record("Rb", StateFailed, -20),
		record("Rc", StateOpened, -10),
	}
	r1 := record("R1", StatePaused, 0, lastFact(3))
	in := Input{Fact: fact("R1", PhaseHealthy, 10, step(4)), Record: &r1, Previous: seen("R1", PhasePaused, 3),
		Siblings: siblings, EverHealthy: true, Now: at(10)}
	b.ReportAllocs()
	for b.Loop() {
		if res := Reduce(in); len(res.Records) != 5 {
			b.Fatalf("records = %v", releaseIDs(res.Records))
		}
	}
}

// BenchmarkReduceDuplicate is the heartbeat path: most facts are resyncs.
func BenchmarkReduceDuplicate(b *testing.B) {
	r1 := record("R1", StateHealthy, 0, healthyAt(3))
	in := Input{Fact: fact("R1", PhaseHealthy, 10, step(4)), Duplicate: true, Record: &r1, Now: at(10)}
	b.ReportAllocs()
	for b.Loop() {
		if Reduce(in).Outcome != OutcomeDuplicate {
			b.Fatal("not a duplicate")
		}
	}
}
