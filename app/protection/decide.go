package protection

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/rollout"
	"github.com/ripcord/ripcord/rollout/freeze"
)

// Review states, as GitHub's review endpoint spells them.
const (
	Approved = "approved"
	Rejected = "rejected"
)

// Rule is one app's environment that the event's environment names.
type Rule struct {
	App, Environment string
	Enabled          bool
	Gates            bool
	// Required are the check runs (ripcord/<gate>) of the gates the
	// config turns on for the environment: only these are judged.
	Required []string
	Regions  []string
	Freezes  []rollout.Freeze
}

// CheckRun is a gate's check run as GitHub lists it.
type CheckRun struct {
	ID                            int64
	Name, Status, Conclusion, URL string
	HeadSHA                       string
	// Scope is the "app/environment" whose gate evaluation made the run:
	// with two apps on one environment, each one's verdict of a gate counts.
	Scope string
	// Evaluation is the run's external id: every run of one gate
	// evaluation has the same.
	Evaluation string
	// Seq orders the evaluations of a scope (gatesflow.EvaluationSeq):
	// the highest is the newest, whatever order their runs were made in;
	// 0 for runs made before evaluations carried one.
	Seq int64
}

// Decision is the answer: State is Approved, Rejected, or empty to ask
// again later (gates still running). Comment says why, for the run's log.
type Decision struct {
	State   string
	Comment string
	// Until is when a freeze ends, for a rejection by a freeze.
	Until time.Time
}

// Decide answers for rules at now. runs are the gate check runs of the
// deployment's commit (or of the pull request that brought it); sha names
// that commit in the comment.
func Decide(rules []Rule, runs []CheckRun, sha string, now time.Time) Decision {
	var enabled []Rule
	for _, r := range rules {
		if r.Enabled {
			enabled = append(enabled, r)
		}
	}
	if len(enabled) == 0 {
		return Decision{State: Rejected, Comment: "ripcord: no app in .github/ripcord.yml enables protection_rule for this environment; " +
			"add `protection_rule: {enabled: true}` to it, or remove ripcord from the environment's protection rules"}
	}
	for _, r := range enabled {
		if f, _, ok := freeze.Active(r.Freezes, r.Regions, now); ok {
			until := frozenUntil(enabled, now)
			return Decision{State: Rejected, Until: until, Comment: fmt.Sprintf("ripcord: %s %s is frozen until %s: %s",
				r.App, r.Environment, until.UTC().Format(time.RFC3339), which(f))}
		}
	}
	if !slices.ContainsFunc(enabled, func(r Rule) bool { return r.Gates }) {
		return Decision{State: Approved, Comment: "ripcord: no freeze window is active for " + names(enabled)}
	}
	return decideGates(enabled, runs, sha)
}

// decideGates reads the gate check runs of the newest evaluation of each
// rule that requires gates: every required gate completed and none failing
// passes; a running one, or one the evaluation has not reported yet,
// waits; no evaluation at all fails closed.
func decideGates(rules []Rule, runs []CheckRun, sha string) Decision {
	gateRuns, missing, unevaluated := evaluatedGateRuns(rules, runs)
	if len(gateRuns) == 0 && len(missing) == 0 {
		return Decision{State: Rejected, Comment: fmt.Sprintf("ripcord: no gate verdict (ripcord/* check run) found for %s or the pull request that brought it; gates are required (protection_rule.gates)", short(sha))}
	}
	if len(unevaluated) > 0 {
		// Each app's gates are its own: another app's verdict on the
		// same environment says nothing about this one's release.
		return Decision{State: Rejected, Comment: fmt.Sprintf("ripcord: no gate verdict of %s (ripcord/* check run) found for %s or the pull request that brought it; gates are required (protection_rule.gates)", strings.Join(unevaluated, ", "), short(sha))}
	}
	running := missing
	var failing, passing []string
	for _, r := range gateRuns {
		switch {
		case r.Status != "completed":
			running = append(running, r.Name)
		case r.Conclusion == "success" || r.Conclusion == "neutral" || r.Conclusion == "skipped":
			passing = append(passing, r.Name)
		default:
			failing = append(failing, r.Name+" ("+r.Conclusion+")")
		}
	}
	switch {
	case len(failing) > 0:
		return Decision{State: Rejected, Comment: "ripcord: gates failed: " + strings.Join(failing, ", ")}
	case len(running) > 0:
		return Decision{Comment: "ripcord: waiting for gates: " + strings.Join(running, ", ")}
	}
	return Decision{State: Approved, Comment: "ripcord: no freeze window is active and the gates passed: " + strings.Join(passing, ", ")}
}

// evaluatedGateRuns judges one evaluation per rule that requires gates:
// the newest one of its scope (the highest Seq; among equal ones, the one
// with the newest run: runs come newest first), all of that evaluation's
// runs and none of an older one's, so a re-evaluation still reporting is
// not mixed with the verdicts it replaces. Only the gates the rule's
// config requires count: a run of a gate removed from the config is no
// verdict. missing names the required gates that the newest evaluation
// has not reported yet (still running).
// A rule with no evaluation adds neither: unevaluated names it ("app
// environment"). Runs come out in name order.
func evaluatedGateRuns(rules []Rule, runs []CheckRun) (out []CheckRun, missing, unevaluated []string) {
	for _, rule := range rules {
		if !rule.Enabled || !rule.Gates {
			continue
		}
		scope := rule.App + "/" + rule.Environment
		// The newest evaluation is the one asked for last (its Seq), not
		// the one whose run was made last: an older evaluation that
		// finishes after a newer one must not win with its stale verdict.
		// Among runs of equal Seq (made before evaluations carried one),
		// the newest run's.
		newest, best := "", int64(-1)
		for _, r := range runs {
			if r.Scope == scope && isGateRun(r.Name) && r.Seq > best {
				newest, best = r.Evaluation, r.Seq
			}
		}
		if newest == "" {
			unevaluated = append(unevaluated, rule.App+" "+rule.Environment)
			continue
		}
		seen := map[string]bool{}
		for _, r := range runs {
			if r.Scope != scope || r.Evaluation != newest || seen[r.Name] || !slices.Contains(rule.Required, r.Name) {
				continue
			}
			seen[r.Name] = true // a gate's newest run within the evaluation
			out = append(out, r)
		}
		for _, name := range rule.Required {
			if !seen[name] {
				missing = append(missing, name+" (not reported yet)")
			}
		}
	}
	slices.SortStableFunc(out, func(a, b CheckRun) int { return strings.Compare(a.Name, b.Name) })
	return out, missing, unevaluated
}

func isGateRun(name string) bool {
	gate, ok := strings.CutPrefix(name, gates.CheckPrefix)
	return ok && isGate(gate)
}

func isGate(name string) bool {
	return slices.Contains([]string{gates.NameProvenance, gates.NameValues, gates.NameCommitSigning, gates.NameSAST,
		gates.NameSBOM, gates.NameImageScan, gates.NameITSM, gates.NameQA, gates.NamePolicyValidation}, name)
}

func names(rs []Rule) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.App+" "+r.Environment)
	}
	return strings.Join(out, ", ")
}

// maxChain bounds how many windows frozenUntil follows from app to app, as
// freeze.Active does within one app's windows.
const maxChain = 1000

// frozenUntil is when a deployment to the rules' environment may really go:
// every enabled app's windows hold it, so the end of one app's window that
// another app's window covers (or starts at) is no end.
func frozenUntil(rules []Rule, now time.Time) time.Time {
	until := now
	for range maxChain {
		next := until
		for _, r := range rules {
			if _, end, ok := freeze.Active(r.Freezes, r.Regions, until); ok && end.After(next) {
				next = end
			}
		}
		if !next.After(until) {
			break
		}
		until = next
	}
	return until
}

// which names the freeze for the comment: its reason (and regions), or,
// without a reason, its times and regions, so a person can tell which of
// the environment's windows holds the deployment.
func which(f rollout.Freeze) string {
	if f.Reason == "" {
		return f.Describe()
	}
	if len(f.Regions) == 0 {
		return f.Reason
	}
	return f.Reason + " (regions " + strings.Join(f.Regions, ", ") + ")"
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
