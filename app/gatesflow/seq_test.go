package gatesflow

import "testing"

// EvaluationSeq reads the sequence externalID writes, and 0 for an id
// written before ids carried one or for anything that is not a plain
// number after the mark.
func TestEvaluationSeq(t *testing.T) {
	t.Parallel()
	a := EvaluateArgs{Repository: "acme/shop", PullRequest: 7, HeadSHA: "abc", Trigger: "rerun"}
	tg := target{app: "checkout", env: "prod"}
	if got := EvaluationSeq(externalID(a, tg, 42)); got != 42 {
		t.Errorf("EvaluationSeq(externalID(…, 42)) = %d", got)
	}
	for _, id := range []string{
		"acme/shop#7@abc checkout/prod rerun",
		"acme/shop#7@abc checkout/prod rerun seq=",
		"acme/shop#7@abc checkout/prod rerun seq=-3",
		"acme/shop#7@abc checkout/prod rerun seq=+3",
		"acme/shop#7@abc checkout/prod rerun seq= 3",
		"acme/shop#7@abc checkout/prod rerun seq=3x",
		"acme/shop#7@abc checkout/prod rerun seq=99999999999999999999",
	} {
		if got := EvaluationSeq(id); got != 0 {
			t.Errorf("EvaluationSeq(%q) = %d, want 0", id, got)
		}
	}
}
