package rolloutflow

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

// Approvals between waves and freeze windows: the pauses of a rollout.

func TestApprovals(t *testing.T) {
	t.Parallel()
	paused := func(r Rollout) bool { return r.Machine.Status == PausedApproval }
	t.Run("granted", func(t *testing.T) {
		h := newHarness(t, "stop", "canary", time.Minute)
		h.start(nil)
		r := h.run(paused)
		if r.Machine.Status != PausedApproval || len(h.dispatches()) != 1 {
			t.Fatalf("status %s after %v, want paused-approval after the canary", r.Machine.Status, h.dispatches())
		}
		if _, err := h.x.vote(context.Background(), h.id, "bob", true, "", "test"); err != nil {
			t.Fatal(err)
		}
		r = h.run(nil)
		if r.Machine.Status != Succeeded || len(h.dispatches()) != 5 {
			t.Errorf("status %s with %d dispatches, want succeeded with 5", r.Machine.Status, len(h.dispatches()))
		}
	})
	t.Run("self-approval refused", func(t *testing.T) {
		h := newHarness(t, "stop", "canary", time.Minute)
		h.start(nil)
		h.run(paused)
		_, err := h.x.vote(context.Background(), h.id, "Alice", true, "", "test")
		var refused *Refused
		if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "cannot approve") {
			t.Fatalf("the release's author approved her own rollout: %v", err)
		}
		h.tick()
		if r := h.rollout(); r.Machine.Status != PausedApproval {
			t.Errorf("status %s after a refused self-approval, want paused-approval", r.Machine.Status)
		}
	})
	t.Run("refused", func(t *testing.T) {
		h := newHarness(t, "rollback-wave", "canary", time.Minute)
		h.start(nil)
		h.run(paused)
		if _, err := h.x.vote(context.Background(), h.id, "bob", false, "not today", "test"); err != nil {
			t.Fatal(err)
		}
		r := h.run(nil)
		if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "approval rejected by bob") {
			t.Fatalf("status %s failure %q", r.Machine.Status, r.Machine.Failure)
		}
		// The canary passed its gate before the approval: rollback-wave
		// leaves it (TestARefusedApprovalFailsTheStageItHeldBack).
		want := []string{"deploy@canary#0 v2"}
		if got := h.dispatches(); !slices.Equal(got, want) {
			t.Errorf("dispatches %v, want %v (on_failure rollback-wave)", got, want)
		}
	})
	t.Run("expired", func(t *testing.T) {
		h := newHarness(t, "stop", "canary", time.Minute)
		h.start(nil)
		r := h.run(paused)
		since := r.Machine.ApprovalSince
		r = h.run(nil)
		if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "approval expired") {
			t.Fatalf("status %s failure %q", r.Machine.Status, r.Machine.Failure)
		}
		if got := h.clock.Now().Sub(since); got != rollout.DefaultApprovalExpiry {
			t.Errorf("expired after %s, want %s", got, rollout.DefaultApprovalExpiry)
		}
	})
}

func TestTwoApprovalsFromTheConfigAreNeeded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "canary", time.Minute)
	cfg := strings.Replace(mustFile(h), "          on_failure:", "          approvals: {count: 2}\n          on_failure:", 1)
	h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", cfg)
	h.start(nil)
	h.run(func(r Rollout) bool { return r.Machine.Status == PausedApproval })
	ctx := context.Background()
	for _, who := range []string{"bob", "bob"} {
		if _, err := h.x.vote(ctx, h.id, who, true, "", "test"); err != nil {
			t.Fatal(err)
		}
	}
	h.tick()
	if r := h.rollout(); r.Machine.Status != PausedApproval {
		t.Fatalf("status %s after one person approved twice, want paused-approval", r.Machine.Status)
	}
	if _, err := h.x.vote(ctx, h.id, "carol", true, "", "test"); err != nil {
		t.Fatal(err)
	}
	if r := h.run(nil); r.Machine.Status != Succeeded {
		t.Errorf("status %s after two approvals", r.Machine.Status)
	}
}

func TestFreezePausesTheStageOfItsRegionUntilItEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	end := t0.Add(3 * time.Hour)
	// The window comes from the config, as users write it.
	cfg := strings.Replace(mustFile(h), "          on_failure:", `          freezes:
            - {start: "`+t0.Add(-time.Hour).Format(time.RFC3339)+`", end: "`+end.Format(time.RFC3339)+`", regions: [us-1], reason: us sale}
          on_failure:`, 1)
	h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", cfg)
	h.start(nil)
	r := h.run(func(r Rollout) bool { return r.Machine.Status == PausedFreeze })
	if r.Machine.Status != PausedFreeze || !strings.Contains(r.Machine.Paused, "us sale") {
		t.Fatalf("status %s paused %q, want paused-freeze by us sale", r.Machine.Status, r.Machine.Paused)
	}
	if r.Machine.Stage != 3 || len(h.dispatches()) != 3 {
		t.Errorf("paused at stage %d after %d dispatches; the freeze holds only resto (us-1)", r.Machine.Stage, len(h.dispatches()))
	}
	if !r.WakeAt.Equal(end) {
		t.Errorf("wakes at %s, want the end of the window %s", r.WakeAt, end)
	}
	r = h.run(nil)
	if r.Machine.Status != Succeeded {
		t.Fatalf("status %s after the window, want succeeded", r.Machine.Status)
	}
	if h.clock.Now().Before(end) {
		t.Errorf("the rollout ended at %s, inside the window", h.clock.Now())
	}
	first := h.gh.Dispatches(testRepo)[3]
	if first.Inputs["batch"] != "deploy@resto/eu-2/eu-2a#0" {
		t.Errorf("fourth dispatch %v", first.Inputs["batch"])
	}
}

func TestFreezeOverrideLetsTheReleaseThrough(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	cfg := strings.Replace(mustFile(h), "          on_failure:", `          freezes:
            - {start: "`+t0.Add(-time.Hour).Format(time.RFC3339)+`", end: "`+t0.Add(time.Hour).Format(time.RFC3339)+`", reason: all}
          on_failure:`, 1)
	h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", cfg)
	h.start(func(s *Snapshot) { s.Settings.FreezeOverride = true })
	paused := false
	r := h.run(func(r Rollout) bool { paused = paused || r.Machine.Status == PausedFreeze; return false })
	if r.Machine.Status != Succeeded || paused {
		t.Fatalf("status %s, paused %v: freeze_override must let the release through", r.Machine.Status, paused)
	}
	audit, err := listAudit(context.Background(), h.x.deps.DB.Read, h.id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(audit, func(l AuditLine) bool { return l.Type == "freeze-override" }) {
		t.Errorf("the override is not in the audit trail: %+v", audit)
	}
}

// A rejection or the expiry of the approval asked after the canary fails
// the stage it held back (eu-1/eu-1a), not the canary, which passed its
// gate: rollout_progress keeps the canary, its pass is counted once (as
// succeeded), and on_failure treats it as a stage already passed (seed 001:
// rollback-wave leaves it on the new version, rollback-all takes it back).
func TestARefusedApprovalFailsTheStageItHeldBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, onFailure, approval string
		expire                    bool
		progress                  string
		states                    []string
		again                     []string // dispatched after the canary's deploy
		drift                     []string
		rolledBack                float64
	}{
		{"rejected stop", "stop", "rejected", false, "1/4",
			[]string{StageSucceeded, StageFailed, StagePending, StagePending}, nil, []string{"canary"}, 0},
		{"expired stop", "stop", "expired", true, "1/4",
			[]string{StageSucceeded, StageFailed, StagePending, StagePending}, nil, []string{"canary"}, 0},
		{"rejected rollback-wave", "rollback-wave", "rejected", false, "1/4",
			[]string{StageSucceeded, StageFailed, StagePending, StagePending}, nil, []string{"canary"}, 0},
		{"expired rollback-all", "rollback-all", "expired", true, "0/4",
			[]string{StageRolledBack, StageFailed, StagePending, StagePending}, []string{"rollback@canary#0 v1"}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.onFailure, "canary", time.Minute)
			h.start(nil)
			h.run(func(r Rollout) bool { return r.Machine.Status == PausedApproval })
			if !tc.expire {
				if _, err := h.x.vote(context.Background(), h.id, "bob", false, "not today", "test"); err != nil {
					t.Fatal(err)
				}
			}
			if r := h.run(nil); r.Machine.Status != Failed {
				t.Fatalf("status %s, want failed", r.Machine.Status)
			}
			want := append([]string{"deploy@canary#0 v2"}, tc.again...)
			if got := h.dispatches(); !slices.Equal(got, want) {
				t.Errorf("dispatches %v, want %v", got, want)
			}
			st, err := h.x.Status(context.Background(), h.id)
			if err != nil {
				t.Fatal(err)
			}
			ro := st.Rollout
			var states []string
			for _, s := range ro.Stages {
				states = append(states, string(s.State))
			}
			if !slices.Equal(states, tc.states) || st.RolloutProgress != tc.progress {
				t.Errorf("stages %v progress %s, want %v %s", states, st.RolloutProgress, tc.states, tc.progress)
			}
			why := "approval " + tc.approval
			if ro.Stage != "eu-1/eu-1a" || !strings.HasPrefix(ro.Stages[1].Gate, why) || ro.Stages[0].Gate != "" {
				t.Errorf("stage %q, gates %q and %q: want eu-1/eu-1a failed by %q, the canary's gate untouched",
					ro.Stage, ro.Stages[0].Gate, ro.Stages[1].Gate, why)
			}
			if ro.Stages[0].Approval != tc.approval {
				t.Errorf("the canary's approval %q, want %q", ro.Stages[0].Approval, tc.approval)
			}
			if !slices.Equal(ro.Drift, tc.drift) {
				t.Errorf("drift %v, want %v", ro.Drift, tc.drift)
			}
			if s, f, rb := h.passes("succeeded"), h.passes("failed"), h.passes("rolled-back"); s != 1 || f != 0 || rb != tc.rolledBack {
				t.Errorf("passes succeeded %v failed %v rolled-back %v, want 1, 0 and %v: the canary's pass concluded once",
					s, f, rb, tc.rolledBack)
			}
		})
	}
}
