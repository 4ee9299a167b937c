package main

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/rollout/status"
)

// A rollout whose batch GitHub does not answer for is running, not paused:
// the status's waiting field is what says why nothing moves, so the person
// reading `ripcord rollout status` must see it as well as the JSON reader.
func TestRolloutStatusSaysWhatItWaitsFor(t *testing.T) {
	s := rolloutflow.StatusJSON{ID: "7", ReleaseID: "r-1", Version: "v2", App: "checkout", Environment: "prod",
		Status: status.Status{RolloutProgress: "0/2", Rollout: status.Rollout{Status: "running", OnFailure: "rollback",
			Stages: []status.Stage{{Name: "canary", State: status.StageRunning}}}},
		Waiting: "since 2026-12-01T10:00:00Z: deploy@canary#0 not dispatched: GitHub did not answer (503): asked for again at each poll"}
	var out strings.Builder
	printRollout(&out, s)
	if want := "waiting for GitHub " + s.Waiting + "\n"; !strings.Contains(out.String(), want) {
		t.Errorf("status printed:\n%s\nwant a line %q", out.String(), want)
	}
	if strings.Contains(out.String(), "paused") {
		t.Errorf("status printed:\n%s\nwant no paused line: nothing paused the rollout", out.String())
	}

	s.Waiting = ""
	out.Reset()
	printRollout(&out, s)
	if strings.Contains(out.String(), "waiting") {
		t.Errorf("status of a rollout GitHub answers for printed:\n%s\nwant no waiting line", out.String())
	}
}
