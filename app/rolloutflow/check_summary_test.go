package rolloutflow

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/rollout"
)

// A release's id and version come from the API as free text; the check
// run's summary shows them as typed, in code spans, where GitHub renders
// no mention and no link, and a backtick cannot end the span early.
func TestTheCheckRunSummaryShowsTheReleaseAsCode(t *testing.T) {
	t.Parallel()
	plan := twoStages(rollout.Stop)
	r := Rollout{ID: "ro-1", ReleaseID: "r`1", Version: "v2 @someone [x](https://evil.example)",
		Snapshot: Snapshot{Plan: plan}, Machine: NewMachine(plan)}
	got := checkView(r, nil).output.GetSummary()
	want := "Rollout `ro-1` of release `` r`1 `` (`v2 @someone [x](https://evil.example)`)."
	if !strings.HasPrefix(got, want) {
		t.Errorf("summary begins %q, want %q", strings.SplitN(got, "\n", 2)[0], want)
	}
}
