package attest

import (
	"context"
	"fmt"

	"github.com/ripcord/ripcord/gates"
)

// Source gives the evidence about a digest; *Verifier is the real one.
type Source interface {
	Verify(ctx context.Context, image string, p Policy) (Report, error)
}

// Trust is what the gates verify with: the policy, or why it could not be
// read (a key file missing from the repository).
type Trust struct {
	Policy Policy
	Err    error
}

// Provenance requires a signed image with a SLSA provenance attestation
// from the configured builder and source repository.
type Provenance struct {
	Source           Source
	Trust            Trust
	BuilderID        string
	SourceRepository string
}

// SBOM requires a verified SBOM attestation in one of Formats (spdx,
// cyclonedx; empty: either).
type SBOM struct {
	Source  Source
	Trust   Trust
	Formats []string
}

// ImageScan requires a verified vulnerability attestation with nothing at
// or above Severity (critical, high, medium, low) outside Allow.
type ImageScan struct {
	Source   Source
	Trust    Trust
	Severity string
	Allow    []string
}

// Name, Class, Slow and Evaluate implement gates.Gate and gates.Slow.
func (Provenance) Name() string       { return gates.NameProvenance }
func (Provenance) Class() gates.Class { return gates.Integrity }
func (Provenance) Slow() bool         { return true }
func (g Provenance) Evaluate(ctx context.Context, s gates.Subject) gates.Verdict {
	rep, stop := evidence(ctx, g.Source, g.Trust, s)
	if stop != nil {
		return *stop
	}
	return JudgeProvenance(rep, g.BuilderID, g.SourceRepository)
}

// Name, Class, Slow and Evaluate implement gates.Gate and gates.Slow.
func (SBOM) Name() string       { return gates.NameSBOM }
func (SBOM) Class() gates.Class { return gates.Content }
func (SBOM) Slow() bool         { return true }
func (g SBOM) Evaluate(ctx context.Context, s gates.Subject) gates.Verdict {
	rep, stop := evidence(ctx, g.Source, g.Trust, s)
	if stop != nil {
		return *stop
	}
	return JudgeSBOM(rep, g.Formats)
}

// Name, Class, Slow and Evaluate implement gates.Gate and gates.Slow.
func (ImageScan) Name() string       { return gates.NameImageScan }
func (ImageScan) Class() gates.Class { return gates.Content }
func (ImageScan) Slow() bool         { return true }
func (g ImageScan) Evaluate(ctx context.Context, s gates.Subject) gates.Verdict {
	rep, stop := evidence(ctx, g.Source, g.Trust, s)
	if stop != nil {
		return *stop
	}
	return JudgeScan(rep, g.Severity, g.Allow)
}

// evidence fetches the report for the subject's digest, or the verdict
// that ends the gate early: no digest, unreadable trust, no answer, or a
// digest the registry does not have.
func evidence(ctx context.Context, src Source, t Trust, s gates.Subject) (Report, *gates.Verdict) {
	stop := func(v gates.Verdict) (Report, *gates.Verdict) { return Report{}, &v }
	if s.Digest == "" {
		return stop(gates.Errored("the release file pins no image digest, so there is nothing to verify"))
	}
	if c := s.DigestConflict(); c != "" {
		return stop(gates.Failed(c))
	}
	if t.Err != nil {
		return stop(gates.Errored(fmt.Sprintf("trust material unreadable: %v", t.Err)))
	}
	rep, err := src.Verify(ctx, s.ImageRef(), t.Policy)
	if err != nil {
		return stop(gates.Errored(fmt.Sprintf("could not verify %s: %v", s.ImageRef(), err)))
	}
	if rep.Missing {
		return stop(gates.Failed(fmt.Sprintf("%s is not in its registry (manifest unknown)", rep.Image)))
	}
	return rep, nil
}
