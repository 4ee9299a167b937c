package rolloutflow

import (
	"fmt"
	"testing"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

// The stage gate's rules (seed 001, health gate), each case a run of the
// machine through the readings it asks for: failures_to_stop consecutive
// red readings fail the stage, during the bake or after it; once the bake
// is over it passes only on a green last reading, and a red last reading is
// read again until green or failures_to_stop; failures_to_stop is at least
// 1. The readings are taken when the machine asks, every 30s from the
// bake's start; what the machine says after the last is the verdict.
func TestTheGateJudgesReadingsAsTheSeedRules(t *testing.T) {
	t.Parallel()
	const green, red = true, false
	tests := []struct {
		name           string
		bake           time.Duration
		failuresToStop int
		readings       []bool
		want           string // a stage state: baking, succeeded or failed
	}{
		{"no reading yet while baking", time.Minute, 2, nil, StageBaking},
		{"green while baking keeps baking", 2 * time.Minute, 2, []bool{green, green}, StageBaking},
		{"a green last reading when the bake is over passes", time.Minute, 2, []bool{red, green}, StageSucceeded},
		{"one red with failures_to_stop 2 keeps baking", 2 * time.Minute, 2, []bool{green, red}, StageBaking},
		{"two consecutive reds fail during the bake", 2 * time.Minute, 2, []bool{green, red, red}, StageFailed},
		{"reds that are not consecutive do not fail", 2 * time.Minute, 2, []bool{red, green, red}, StageBaking},
		{"a red last reading after the bake keeps reading", time.Minute, 2, []bool{green, red}, StageBaking},
		{"reading on after the bake passes on green", time.Minute, 2, []bool{green, red, green}, StageSucceeded},
		{"reading on after the bake fails at failures_to_stop", time.Minute, 2, []bool{green, red, red}, StageFailed},
		{"failures_to_stop 1 fails on the first red", time.Minute, 1, []bool{red}, StageFailed},
		{"failures_to_stop 0 counts as the default 1: no verdict without a reading", time.Minute, 0, nil, StageBaking},
		{"failures_to_stop 0 counts as the default 1: green readings pass", time.Minute, 0, []bool{green, green}, StageSucceeded},
		{"failures_to_stop 0 counts as the default 1: one red fails", time.Minute, 0, []bool{green, red}, StageFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := twoStages(rollout.Stop)
			p.Stages[0].Bake, p.Health.FailuresToStop = tt.bake, tt.failuresToStop
			runs := map[Ref]Run{deployA: {State: RunSuccess}}
			m := baking(p)
			now, lastRed := t0, ""
			for i, g := range tt.readings {
				now = t0.Add(time.Duration(i+1) * 30 * time.Second)
				act, _ := m.Next(inputs(p, now, runs))
				if act.Kind != ActRead || act.Read.N != i+1 || act.Read.Pass != -1 {
					t.Fatalf("at %s: action %+v state %s, want reading %d of the stage gate", now.Sub(t0), act, m.Stages[0].State, i+1)
				}
				why := ""
				if !g {
					why = fmt.Sprintf("metric error-rate (eu-1): reading %d red", i+1)
					lastRed = why
				}
				m.Observe(act.Read, now, g, why)
			}
			act, _ := m.Next(inputs(p, now, runs))
			if got := m.Stages[0].State; got != tt.want {
				t.Fatalf("state %s (status %s, gate %q, action %+v), want %s", got, m.Status, m.Stages[0].Gate, act, tt.want)
			}
			switch tt.want {
			case StageBaking:
				if next := now.Add(30 * time.Second); act.Kind != ActWait || !act.Until.Equal(next) {
					t.Errorf("action %+v, want a wait for the next reading at %s", act, next.Sub(t0))
				}
			case StageSucceeded:
				if act.Kind != ActDispatch || act.Ref.Stage != 1 {
					t.Errorf("action %+v, want the next stage dispatched", act)
				}
			case StageFailed:
				if m.Status != Failed || m.Stages[0].Gate != lastRed {
					t.Errorf("status %s gate %q, want failed on %q", m.Status, m.Stages[0].Gate, lastRed)
				}
			}
		})
	}
}
