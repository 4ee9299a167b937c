package attest

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/gates"
)

// noAlerts is a code-scanning answer with nothing open.
type noAlerts struct{}

func (noAlerts) OpenAlerts(context.Context, string, string) (gates.Scan, error) {
	return gates.Scan{}, nil
}

// benchRelease is one signed release with provenance, SBOM and scan, and
// its gates: the three registry gates, sast (GitHub faked) and the
// process gates.
func benchRelease(b *testing.B) (gates.Subject, func(Source) []gates.Gate) {
	key, image := signedRelease(b)
	trust := Trust{Policy: key.policy()}
	build := func(src Source) []gates.Gate {
		return []gates.Gate{
			Provenance{Source: src, Trust: trust, BuilderID: builder, SourceRepository: source},
			SBOM{Source: src, Trust: trust},
			ImageScan{Source: src, Trust: trust, Severity: "critical"},
			gates.SAST{GitHub: noAlerts{}, Severity: "high"},
			gates.ITSM{BodyField: `CHG[0-9]{7}`},
			gates.QA{Labels: []string{"qa-approved"}},
		}
	}
	s := subjectOf(image)
	s.Repository, s.GitRevision, s.Body, s.Labels = "acme/checkout", "abcdef0123456789", "Change: CHG0012345", []string{"qa-approved"}
	return s, build
}

func evaluateAll(b *testing.B, gs []gates.Gate, s gates.Subject) {
	for _, r := range gates.Evaluate(context.Background(), gs, s) {
		if r.Verdict.Outcome != gates.Pass {
			b.Fatalf("%s: %s %q", r.Gate, r.Verdict.Outcome, r.Verdict.Summary)
		}
	}
}

// BenchmarkGateEvaluationCold evaluates one release's registry gates with
// an empty cache: every iteration reads and verifies from the registry.
func BenchmarkGateEvaluationCold(b *testing.B) {
	s, build := benchRelease(b)
	for b.Loop() {
		evaluateAll(b, build(NewVerifier(Registries{}, 0)), s)
	}
}

// BenchmarkGateEvaluationWarm evaluates the same release with the report
// already cached, as a re-run or a second PR pinning the digest does.
func BenchmarkGateEvaluationWarm(b *testing.B) {
	s, build := benchRelease(b)
	gs := build(NewVerifier(Registries{}, 0))
	evaluateAll(b, gs, s)
	for b.Loop() {
		evaluateAll(b, gs, s)
	}
}
