package rollout

import (
	"fmt"
	"strings"
	"unicode"
)

// The names below are what users read in `ripcord validate`, the timeline,
// logs and the status JSON, so they follow the seed letter for letter:
//
//	stage  canary | eu-1/eu-1b | resto/eu-2a+us-1a
//	pass   canary | eu-1/eu-1/eu-1b | resto/eu-2
//	batch  deploy@eu-1/eu-1/eu-1b#0
//	read   gate@eu-1/eu-1/eu-1b#0.3

// StepDeploy is the step whose per-batch runs are named in a Plan; the other
// target steps (post-test, activation) use StepName with their own name.
const StepDeploy = "deploy"

// nameBreakers separate the parts of stage, pass and batch names, so wave
// names and the region and az labels that go into names must not contain
// them, or two different plans could print the same names.
const nameBreakers = "/+@#"

// nameBreakersList is nameBreakers as messages spell it.
const nameBreakersList = "/, +, @, #"

// stageName is <wave> for an undivided wave, else <wave>/<part>+<part>…
// where the parts are the AZs (by: az) or regions (by: region) updated
// together.
func stageName(wave string, parts []string) string {
	if len(parts) == 0 {
		return wave
	}
	return wave + "/" + strings.Join(parts, "+")
}

// passName is <wave>/<region>/<az>, <wave>/<region>, or <wave> alone.
func passName(wave string, parts ...string) string {
	return strings.Join(append([]string{wave}, parts...), "/")
}

// StepName names one run of a target step on one batch of a pass:
// deploy@eu-1/eu-1/eu-1b#0.
func StepName(step, pass string, batch int) string {
	return fmt.Sprintf("%s@%s#%d", step, pass, batch)
}

// GateReadName names the n-th read of the gate after a batch (batch_bake):
// gate@eu-1/eu-1/eu-1b#0.3.
func GateReadName(pass string, batch, n int) string {
	return fmt.Sprintf("gate@%s#%d.%d", pass, batch, n)
}

// nameSafe reports whether s can be a part of a stage, pass or batch name.
func nameSafe(s string) bool {
	return s != "" && !strings.ContainsAny(s, nameBreakers) && !strings.ContainsFunc(s, unicode.IsSpace)
}
