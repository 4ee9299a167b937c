package gates

// Outcome is what a gate found, before the class policy applies.
type Outcome string

// Outcomes. Error means the gate could not decide (a service down, no data,
// bad configuration); it never passes a blocking gate.
const (
	Pass  Outcome = "pass"
	Fail  Outcome = "fail"
	Error Outcome = "error"
)

// Finding is one thing a gate found: a schema violation, a vulnerability, a
// code-scanning alert. Path and Line place it in the repository when known.
type Finding struct {
	Severity string `json:"severity,omitempty"`
	ID       string `json:"id,omitempty"` // CVE, rule id, …
	Message  string `json:"message"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	URL      string `json:"url,omitempty"`
}

// Link is a titled URL listed under the findings.
type Link struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// Verdict is a gate's answer. Summary is one line saying why.
type Verdict struct {
	Outcome  Outcome   `json:"outcome"`
	Summary  string    `json:"summary"`
	Findings []Finding `json:"findings,omitempty"`
	Links    []Link    `json:"links,omitempty"`
}

// Passed, Failed and Errored build verdicts.
func Passed(summary string, fs ...Finding) Verdict {
	return Verdict{Outcome: Pass, Summary: summary, Findings: fs}
}

// Failed is a verdict that found a problem.
func Failed(summary string, fs ...Finding) Verdict {
	return Verdict{Outcome: Fail, Summary: summary, Findings: fs}
}

// Errored is a verdict of a gate that could not decide.
func Errored(summary string) Verdict { return Verdict{Outcome: Error, Summary: summary} }
