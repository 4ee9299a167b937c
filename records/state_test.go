package records

import (
	"fmt"
	"strings"
	"testing"
)

// allowedTransitions is the state machine written out by hand, one line per
// transition with the situation that produces it, so a change to the table
// in state.go has to be made here too.
var allowedTransitions = []struct {
	from, to State
	when     string
}{
	{StateOpened, StateProgressing, "first Progressing fact of a merged release"},
	{StateOpened, StatePaused, "the Progressing fact was lost, first fact is a canary pause"},
	{StateOpened, StateHealthy, "a plain rollout reports Healthy first, or a task success arrives alone"},
	{StateOpened, StateDegraded, "the first fact is already Degraded"},
	{StateOpened, StateAborted, "aborted before any other fact arrived"},
	{StateOpened, StateFailed, "Argo CD sync failed before the Rollout changed"},
	{StateOpened, StateSuperseded, "a newer release became healthy before this one reported anything"},
	{StateOpened, StateRolledBack, "a rollback of it became healthy before it reported anything"},

	{StateProgressing, StatePaused, "canary reached a pause step"},
	{StateProgressing, StateHealthy, "canary finished"},
	{StateProgressing, StateDegraded, "progress deadline exceeded"},
	{StateProgressing, StateAborted, "analysis or a person aborted the canary"},
	{StateProgressing, StateFailed, "deploy task failed"},
	{StateProgressing, StateSuperseded, "a newer release became healthy mid-rollout"},
	{StateProgressing, StateRolledBack, "a rollback of it became healthy mid-rollout"},

	{StatePaused, StateProgressing, "canary resumed after a pause"},
	{StatePaused, StateHealthy, "promote-full from a pause"},
	{StatePaused, StateDegraded, "degraded while paused"},
	{StatePaused, StateAborted, "aborted at a pause"},
	{StatePaused, StateFailed, "sync failed while paused"},
	{StatePaused, StateSuperseded, "a newer release became healthy"},
	{StatePaused, StateRolledBack, "rolled back while paused"},

	{StateHealthy, StateProgressing, "a restart or a scale of the healthy release"},
	{StateHealthy, StatePaused, "a person paused the healthy rollout"},
	{StateHealthy, StateDegraded, "pods of a healthy release crash later"},
	{StateHealthy, StateAborted, "abort reported after healthy"},
	{StateHealthy, StateFailed, "a later sync of the same release failed"},
	{StateHealthy, StateSuperseded, "the next release became healthy"},
	{StateHealthy, StateRolledBack, "a rollback of it became healthy"},

	{StateDegraded, StateProgressing, "recovers and progresses again"},
	{StateDegraded, StatePaused, "recovers into a pause step"},
	{StateDegraded, StateHealthy, "recovers"},
	{StateDegraded, StateAborted, "a person aborts the degraded canary"},
	{StateDegraded, StateFailed, "the redeploy task fails"},
	{StateDegraded, StateSuperseded, "the next release became healthy"},
	{StateDegraded, StateRolledBack, "a rollback of it became healthy"},

	{StateAborted, StateProgressing, "Tower Retry: Progressing with the abort flag clear"},
	{StateAborted, StatePaused, "retried canary reached a pause step"},
	{StateAborted, StateHealthy, "retried canary finished"},
	{StateAborted, StateDegraded, "retried canary degraded"},
	{StateAborted, StateFailed, "retry's deploy task failed"},
	{StateAborted, StateSuperseded, "the next release became healthy"},
	{StateAborted, StateRolledBack, "a rollback of it became healthy"},

	{StateFailed, StateProgressing, "the re-run of the deploy workflow started"},
	{StateFailed, StatePaused, "a later sync reached a pause step"},
	{StateFailed, StateHealthy, "the re-run succeeded"},
	{StateFailed, StateDegraded, "a later sync came up degraded"},
	{StateFailed, StateAborted, "a later sync was aborted"},
	{StateFailed, StateSuperseded, "the next release became healthy"},
	{StateFailed, StateRolledBack, "a rollback of it became healthy"},
}

func TestTransitionAllowed(t *testing.T) {
	t.Parallel()
	for _, tc := range allowedTransitions {
		t.Run(fmt.Sprintf("%s->%s: %s", tc.from, tc.to, tc.when), func(t *testing.T) {
			if err := Transition(tc.from, tc.to); err != nil {
				t.Errorf("Transition(%s, %s) = %v, want allowed", tc.from, tc.to, err)
			}
		})
	}
}

func TestTransitionRefused(t *testing.T) {
	t.Parallel()
	allowed := map[[2]State]bool{}
	for _, tc := range allowedTransitions {
		allowed[[2]State{tc.from, tc.to}] = true
	}
	refused := 0
	for _, from := range States {
		for _, to := range States {
			if from == to || allowed[[2]State{from, to}] {
				continue
			}
			refused++
			t.Run(fmt.Sprintf("%s->%s", from, to), func(t *testing.T) {
				err := Transition(from, to)
				if err == nil {
					t.Fatalf("Transition(%s, %s) allowed; only the table in state_test.go may allow it", from, to)
				}
				if !strings.Contains(err.Error(), string(from)) || !strings.Contains(err.Error(), string(to)) {
					t.Errorf("error %q should name both states", err)
				}
			})
		}
	}
	// Nothing re-enters opened (8) and the two final states leave to
	// nothing (8 each, the 2 into opened already counted).
	if refused != 22 {
		t.Errorf("%d refused transitions, want 22", refused)
	}
}

func TestTransitionRefusesUnknownStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ from, to State }{{"done", StateHealthy}, {StateHealthy, "Healthy"}} {
		if err := Transition(tc.from, tc.to); err == nil || !strings.Contains(err.Error(), "unknown state") {
			t.Errorf("Transition(%q, %q) = %v, want an unknown state error", tc.from, tc.to, err)
		}
	}
}

func TestFinalStatesAreExactlySupersededAndRolledBack(t *testing.T) {
	t.Parallel()
	for _, s := range States {
		want := s == StateSuperseded || s == StateRolledBack
		if s.Final() != want {
			t.Errorf("%s.Final() = %v, want %v", s, s.Final(), want)
		}
		if (Record{State: s}).Open() == want {
			t.Errorf("record in %s: Open() = %v, want %v", s, !want, !want)
		}
	}
}
