package rollout

import "testing"

func TestCapParallelKeepsWhatWasAsked(t *testing.T) {
	doc := targetsDoc + "rollout:\n  waves: [{name: all, select: \"region!=x\", parallel: 10}]\n  max_unavailable: 100%\n"
	plan := mustPlan(t, doc, PlanOptions{})
	b := plan.Stages[0].Passes[0].Batches[0]
	if b.Parallel < 2 {
		t.Fatalf("the fixture's batch runs %d at a time; the test needs at least 2", b.Parallel)
	}
	for _, tc := range []struct {
		name string
		max  int
		want int
	}{
		{"a server allowing one at a time", 1, 1},
		{"a server allowing more than the batch", 100, b.Parallel},
		{"no server cap", 0, b.Parallel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := plan.CapParallel(tc.max).Stages[0].Passes[0].Batches[0]
			if got.Parallel != tc.want || got.ParallelRequested != 10 {
				t.Errorf("parallel %d (requested %d), want %d (requested 10)", got.Parallel, got.ParallelRequested, tc.want)
			}
		})
	}
	if plan.Stages[0].Passes[0].Batches[0].Parallel != b.Parallel {
		t.Error("CapParallel changed the plan it was given")
	}
}
