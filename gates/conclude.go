package gates

import "fmt"

// Conclusion is a check run's conclusion as GitHub spells it.
type Conclusion string

// Conclusions. GitHub's required checks accept success and neutral, so an
// advisory content gate that found something reports neutral: it lets the
// rollback merge and still stands out from a clean success.
const (
	Success Conclusion = "success"
	Failure Conclusion = "failure"
	Neutral Conclusion = "neutral"
)

// AdvisoryWords mark a content gate that passed because the PR is an
// eligible rollback.
const AdvisoryWords = "advisory: eligible rollback"

// Conclude applies the class policy to a verdict: integrity and process
// gates block on fail or error; content gates block on an ordinary
// promotion, and on an eligible rollback report and pass. The title is the
// one-line verdict the check run shows.
func Conclude(class Class, v Verdict, eligibleRollback bool) (Conclusion, string) {
	line := v.Summary
	if v.Outcome == Pass {
		return Success, title("passed", line)
	}
	if class == Content && eligibleRollback {
		what := "found issues"
		if v.Outcome == Error {
			what = "could not decide"
		}
		return Neutral, fmt.Sprintf("%s — %s: %s", AdvisoryWords, what, line)
	}
	if v.Outcome == Error {
		return Failure, title("could not decide (fails closed)", line)
	}
	return Failure, title("failed", line)
}

func title(word, line string) string {
	if line == "" {
		return word
	}
	return word + ": " + line
}
