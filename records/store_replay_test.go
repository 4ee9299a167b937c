package records

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// TestStoreReplayMatchesTheReducerModel plays TestReplay's stories through
// the store and, side by side, through memStore, the in-memory model of how
// a store must load an Input and save a Result. Every step's Result must be
// the model's, so the store loads the same duplicates, observations,
// records, siblings and ever-healthy; and at the end the stored records
// and audit trail must be the model's.
func TestStoreReplayMatchesTheReducerModel(t *testing.T) {
	t.Parallel()
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
					if st.quiet && len(got.Audit) > 0 {
						t.Fatalf("step %d (%s at minute %d): a resync wrote audit events %v", i, describeFact(st.fact), st.now, auditTypes(got))
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
