package status

import (
	"slices"
	"strings"
	"testing"
)

func TestDriftOf(t *testing.T) {
	deployed := []Pass{{Batches: []Batch{{State: "succeeded"}}}}
	untouched := []Pass{{Batches: []Batch{{State: string(StagePending)}}}}
	tests := []struct {
		name   string
		stages []Stage
		want   []string
	}{
		{"stop after two stages: they and the failed stage's batches are on the new version",
			[]Stage{{Name: "a", State: StageSucceeded}, {Name: "b", State: StageFailed, Passes: deployed}, {Name: "c", State: StagePending}},
			[]string{"a", "b (partly)"}},
		{"a failed stage whose batches never went out is not on the new version",
			[]Stage{{Name: "a", State: StageSucceeded}, {Name: "b", State: StageFailed, Passes: untouched}},
			[]string{"a"}},
		{"everything rolled back: one version, no drift",
			[]Stage{{Name: "a", State: StageRolledBack}, {Name: "b", State: StageRolledBack}}, nil},
		{"the first stage failed before any batch: no drift",
			[]Stage{{Name: "a", State: StageFailed, Passes: untouched}, {Name: "b", State: StagePending}}, nil},
	}
	for _, tt := range tests {
		if got := DriftOf(tt.stages); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	md := Markdown(Status{Rollout: Rollout{Status: "failed", OnFailure: "stop", Drift: []string{"a"}, Stages: []Stage{{Name: "a"}}}})
	if !strings.Contains(md, "Drift: the new version runs on a") {
		t.Errorf("the summary does not report the drift:\n%s", md)
	}
}
