package records

import "fmt"

// State is where a release stands. The values are the ones users see.
type State string

const (
	StateOpened      State = "opened"
	StateProgressing State = "progressing"
	StatePaused      State = "paused"
	StateHealthy     State = "healthy"
	StateDegraded    State = "degraded"
	StateAborted     State = "aborted"
	StateFailed      State = "failed"
	StateSuperseded  State = "superseded"
	StateRolledBack  State = "rolled-back"
)

// States lists every state in lifecycle order.
var States = []State{
	StateOpened, StateProgressing, StatePaused, StateHealthy, StateDegraded,
	StateAborted, StateFailed, StateSuperseded, StateRolledBack,
}

// live are the states a release that the cluster still reports on can move
// between. Sources are level-triggered and a restart or a scale of a healthy
// release reports Progressing again, so within this set every move is
// allowed: the facts, not the table, decide which one happens.
var live = []State{StateProgressing, StatePaused, StateHealthy, StateDegraded, StateAborted, StateFailed}

// transitions is the state machine. opened is only ever a starting state;
// superseded and rolled-back are final: a newer release took over, so later
// facts about the old one cannot reopen it (that would be drift).
var transitions = buildTransitions()

func buildTransitions() map[State]map[State]bool {
	t := map[State]map[State]bool{}
	allow := func(from State, to ...State) {
		if t[from] == nil {
			t[from] = map[State]bool{}
		}
		for _, s := range to {
			if s != from {
				t[from][s] = true
			}
		}
	}
	closing := []State{StateSuperseded, StateRolledBack}
	allow(StateOpened, live...)
	allow(StateOpened, closing...)
	for _, s := range live {
		allow(s, live...)
		allow(s, closing...)
	}
	return t
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	for _, k := range States {
		if s == k {
			return true
		}
	}
	return false
}

// Final reports whether no fact can move the record any more.
func (s State) Final() bool { return s == StateSuperseded || s == StateRolledBack }

// Settled reports whether the release reached an outcome (healthy or a
// failure) or was closed, as opposed to still being rolled out.
func (s State) Settled() bool {
	switch s {
	case StateOpened, StateProgressing, StatePaused:
		return false
	}
	return true
}

// CanTransition reports whether the state machine allows from → to.
// Staying in the same state is not a transition.
func CanTransition(from, to State) bool { return transitions[from][to] }

// Transition returns an error naming both states when from → to is not
// allowed. Callers check from == to first; that is not a transition.
func Transition(from, to State) error {
	if !from.Valid() {
		return fmt.Errorf("state: unknown state %q", from)
	}
	if !to.Valid() {
		return fmt.Errorf("state: unknown state %q", to)
	}
	if !CanTransition(from, to) {
		if from.Final() {
			return fmt.Errorf("state: %s is final, cannot become %s", from, to)
		}
		return fmt.Errorf("state: %s cannot become %s", from, to)
	}
	return nil
}
