package gates

import (
	"context"
	"testing"
)

// BenchmarkEvaluateRelease evaluates the gates that need no network for one
// release: values (built-in schema, compiled each time), itsm and qa.
func BenchmarkEvaluateRelease(b *testing.B) {
	gs := []Gate{Values{Fields: fields}, ITSM{BodyField: `CHG[0-9]{7}`}, QA{Labels: []string{"qa-approved"}}}
	s := Assess(history(), nil, Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + oldDigest,
		Digest: oldDigest, ReleaseFile: "deploy/prod.yaml", ReleaseFileContent: []byte(goodRelease), Body: "CHG0012345", Labels: []string{"qa-approved"}}, 5)
	for b.Loop() {
		for _, r := range Evaluate(context.Background(), gs, s) {
			if r.Output.Conclusion == Failure {
				b.Fatalf("%s failed: %s", r.Gate, r.Verdict.Summary)
			}
		}
	}
}
