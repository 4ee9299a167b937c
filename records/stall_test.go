package records

import (
	"strings"
	"testing"
	"time"
)

func TestCheckStall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		r     Record
		now   time.Time
		after time.Duration
		want  bool
	}{
		{"merged release with no fact for 15m stalls", record("R1", StateOpened, 0), at(15), 15 * time.Minute, true},
		{"merged release with no fact for 14m is not yet stalled", record("R1", StateOpened, 0), at(14), 15 * time.Minute, false},
		{"zero stall_after means the 15m default", record("R1", StateOpened, 0), at(14), 0, false},
		{"default applies when stall_after is zero", record("R1", StateOpened, 0), at(16), 0, true},
		{"custom stall_after", record("R1", StateOpened, 0), at(6), 5 * time.Minute, true},
		{"one fact arrived: not stalled, resyncs carry the rest", record("R1", StateProgressing, 0, lastFact(1)), at(120), 15 * time.Minute, false},
		{"superseded before any fact: closed, not stalled", record("R1", StateSuperseded, 0), at(120), 15 * time.Minute, false},
		{"rolled-back before any fact: closed, not stalled", record("R1", StateRolledBack, 0), at(120), 15 * time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := CheckStall(tc.r, tc.now, tc.after)
			if got != tc.want {
				t.Fatalf("CheckStall = %v (%q), want %v", got, reason, tc.want)
			}
			if got && (!strings.Contains(reason, "R1") || !strings.Contains(reason, "no fact")) {
				t.Errorf("reason %q should name the release and say no fact arrived", reason)
			}
			if !got && reason != "" {
				t.Errorf("reason %q for a record that is not stalled", reason)
			}
		})
	}
}

func TestStalledAlertsOncePerRelease(t *testing.T) {
	t.Parallel()
	r := record("R1", StateOpened, 0)
	_, reason := CheckStall(r, at(20), 0)
	ev1, eff1 := Stalled(r, reason, at(20))
	_, eff2 := Stalled(r, reason, at(40))
	if ev1.Type != AuditStallDetected || ev1.ReleaseID != "R1" {
		t.Errorf("audit = %+v, want stall_detected for R1", ev1)
	}
	if eff1.Kind != EffectAlert || eff1.Type != AlertStall || eff1.Key != eff2.Key {
		t.Errorf("effects %+v / %+v: want stall alerts with one key per release", eff1, eff2)
	}
}
