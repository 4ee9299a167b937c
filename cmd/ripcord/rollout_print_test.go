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
	t.Parallel()
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

// `ripcord rollout list` printed no word of the outage a rollout waits
// out, though the list's JSON says it: each rollout's line says it, in its
// own column.
func TestRolloutListSaysWhichWaits(t *testing.T) {
	t.Parallel()
	const waiting = "since 2026-12-01T10:00:00Z: deploy@canary#0 not dispatched: GitHub did not answer (503): asked for again at each poll"
	rs := []rolloutflow.StatusJSON{
		{ID: "ro-2", ReleaseID: "r-2", Version: "v3", Status: status.Status{RolloutProgress: "0/2", Rollout: status.Rollout{Status: "paused-queue"}}},
		{ID: "ro-1", ReleaseID: "r-1", Version: "v2", Status: status.Status{RolloutProgress: "0/2", Rollout: status.Rollout{Status: "running", Stage: "canary"}},
			Waiting: waiting},
	}
	var out strings.Builder
	printRollouts(&out, rs)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "WAITING FOR GITHUB") {
		t.Fatalf("list printed:\n%s\nwant a header with a WAITING FOR GITHUB column and a line a rollout", out.String())
	}
	if !strings.HasPrefix(lines[2], "ro-1") || !strings.HasSuffix(lines[2], "  "+waiting) {
		t.Errorf("ro-1's line %q, want it to end with what it waits for, %q", lines[2], waiting)
	}
	if !strings.HasPrefix(lines[1], "ro-2") || strings.Contains(lines[1], "GitHub") {
		t.Errorf("ro-2's line %q, want no waiting: it waits out no outage", lines[1])
	}
}
