package health

import (
	"fmt"
	"strings"
)

// Verdict is what the gate says after a reading.
type Verdict string

const (
	// Continue: keep baking, or keep reading after the bake until the last
	// reading is green or failures_to_stop is reached.
	Continue Verdict = "continue"
	Pass     Verdict = "pass"
	Fail     Verdict = "fail"
)

// Decision is a verdict with the reason a status page shows.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
}

// Gate is the judgement rule of a stage's (or a batch's) gate.
type Gate struct {
	FailuresToStop int // consecutive red readings that fail the stage; at least 1
}

// Judge applies the gate to the readings so far.
func (g Gate) Judge(readings []Reading, bakeOver bool) Decision {
	return Judge(readings, g.FailuresToStop, bakeOver)
}

// Judge is the seed's rule over the readings of a bake, oldest first: the
// stage fails as soon as failures_to_stop consecutive readings are red, and
// once the bake is over it passes only on a green last reading; a red last
// reading after the bake means reading on, until green or failures_to_stop.
// Without readings there is nothing to pass on: a gate with checks needs at
// least one green look (the executor does not call Judge for a gate that is
// the bake alone).
func Judge(readings []Reading, failuresToStop int, bakeOver bool) Decision {
	failuresToStop = max(failuresToStop, 1)
	red := 0
	for i := len(readings) - 1; i >= 0 && !readings[i].Green; i-- {
		red++
	}
	switch {
	case red >= failuresToStop:
		last := readings[len(readings)-1]
		return Decision{Fail, fmt.Sprintf("%d consecutive red readings (failures_to_stop %d): %s",
			red, failuresToStop, LastReason(last))}
	case len(readings) == 0:
		return Decision{Continue, "no reading yet"}
	case red > 0:
		last := readings[len(readings)-1]
		return Decision{Continue, fmt.Sprintf("red %d of %d: %s", red, failuresToStop, LastReason(last))}
	case bakeOver:
		return Decision{Pass, fmt.Sprintf("green after %d readings", len(readings))}
	}
	return Decision{Continue, "green, baking"}
}

// LastReason is the red reason a status shows for a reading, the seed's
// stages[].gate ("metric error-rate (us-1/us-1a): value 0.2 above max 0.01");
// several red checks are joined with "; ".
func LastReason(r Reading) string {
	if r.Green {
		return ""
	}
	if len(r.Reasons) == 0 {
		return "red"
	}
	return strings.Join(r.Reasons, "; ")
}

// LastRed is the reason of the latest red reading, or "" when none is red.
func LastRed(readings []Reading) string {
	for i := len(readings) - 1; i >= 0; i-- {
		if !readings[i].Green {
			return LastReason(readings[i])
		}
	}
	return ""
}
