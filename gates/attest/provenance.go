package attest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/gates"
)

// slsa is the part of a SLSA provenance predicate (v0.2 or v1) the gate
// reads: who built it, from which repository.
type slsa struct {
	Builder    struct{ ID string } `json:"builder"` // v0.2
	Invocation struct {
		ConfigSource struct{ URI string } `json:"configSource"`
	} `json:"invocation"`
	Materials       []struct{ URI string } `json:"materials"`
	BuildDefinition struct {
		ExternalParameters struct {
			Workflow struct{ Repository string } `json:"workflow"`
		} `json:"externalParameters"`
		ResolvedDependencies []struct{ URI string } `json:"resolvedDependencies"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct{ ID string } `json:"builder"`
	} `json:"runDetails"`
}

// builderAndSource reads the builder id and source repository of either
// version. The source is where the build was defined: v0.2's
// invocation.configSource.uri (else the first material), v1's
// externalParameters.workflow.repository (else the first resolved
// dependency) — the positions GitHub's SLSA builders fill.
func builderAndSource(pred json.RawMessage) (string, string, error) {
	var p slsa
	if err := json.Unmarshal(pred, &p); err != nil {
		return "", "", fmt.Errorf("provenance predicate is not SLSA JSON: %w", err)
	}
	builder := p.RunDetails.Builder.ID
	if builder == "" {
		builder = p.Builder.ID
	}
	source := p.BuildDefinition.ExternalParameters.Workflow.Repository
	if source == "" && len(p.BuildDefinition.ResolvedDependencies) > 0 {
		source = p.BuildDefinition.ResolvedDependencies[0].URI
	}
	if source == "" {
		source = p.Invocation.ConfigSource.URI
	}
	if source == "" && len(p.Materials) > 0 {
		source = p.Materials[0].URI
	}
	return builder, source, nil
}

// SameRepository compares repository URIs the way provenance writes them:
// "git+https://github.com/acme/checkout@refs/heads/main" is
// "github.com/acme/checkout", case aside.
func SameRepository(a, b string) bool { return normalRepo(a) == normalRepo(b) }

func normalRepo(u string) string {
	u = strings.TrimPrefix(strings.TrimSpace(u), "git+")
	for _, p := range []string{"https://", "http://", "ssh://", "git://"} {
		u = strings.TrimPrefix(u, p)
	}
	if i := strings.IndexByte(u, '@'); i >= 0 {
		u = u[:i]
	}
	u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
	return strings.ToLower(u)
}

// JudgeProvenance passes a signed digest with a provenance attestation
// whose builder and source match; an empty builderID or source is not
// checked.
func JudgeProvenance(r Report, builderID, source string) gates.Verdict {
	if r.Signed == "" {
		return gates.Failed(fmt.Sprintf("%s has no valid cosign signature: %s", r.Image, r.SignatureProblem))
	}
	provs := r.of(PredicateSLSAv02, PredicateSLSAv1)
	if len(provs) == 0 {
		why := r.AttestationProblem
		if why == "" {
			why = "the verified attestations are of other predicate types"
		}
		return gates.Failed(fmt.Sprintf("%s is signed (%s) but has no verified SLSA provenance attestation: %s", r.Image, r.Signed, why))
	}
	var fs []gates.Finding
	for _, p := range provs {
		b, src, err := builderAndSource(p.Predicate)
		switch {
		case err != nil:
			fs = append(fs, gates.Finding{ID: p.PredicateType, Message: err.Error()})
		case builderID != "" && b != builderID:
			fs = append(fs, gates.Finding{ID: p.PredicateType, Message: fmt.Sprintf("builder id is %q, want %q (gates.provenance.builder_id)", b, builderID)})
		case source != "" && !SameRepository(src, source):
			fs = append(fs, gates.Finding{ID: p.PredicateType, Message: fmt.Sprintf("source repository is %q, want %q (gates.provenance.source_repository)", src, source)})
		default:
			return gates.Passed(fmt.Sprintf("%s is signed (%s) and its provenance (%s) says built by %s from %s",
				r.Image, r.Signed, p.PredicateType, orUnchecked(b), orUnchecked(src)))
		}
	}
	return gates.Failed(fmt.Sprintf("%s: no provenance attestation matches the configuration: %s", r.Image, fs[0].Message), fs...)
}

func orUnchecked(s string) string {
	if s == "" {
		return "(not stated)"
	}
	return s
}

// JudgeSBOM passes a digest with a verified SBOM attestation in one of
// formats.
func JudgeSBOM(r Report, formats []string) gates.Verdict {
	var types []string
	if len(formats) == 0 {
		formats = []string{"spdx", "cyclonedx"}
	}
	for _, f := range formats {
		switch f {
		case "spdx":
			types = append(types, PredicateSPDX)
		case "cyclonedx":
			types = append(types, PredicateCycloneDX)
		default:
			return gates.Errored(fmt.Sprintf("gates.sbom.formats: %q is not spdx or cyclonedx", f))
		}
	}
	var fs []gates.Finding
	for _, s := range r.of(types...) {
		if len(s.Predicate) == 0 || string(s.Predicate) == "null" {
			continue
		}
		fs = append(fs, gates.Finding{ID: s.PredicateType, Message: "SBOM attestation verified by " + s.Signer})
	}
	if len(fs) == 0 {
		why := r.AttestationProblem
		if why == "" {
			why = "the verified attestations are of other predicate types"
		}
		return gates.Failed(fmt.Sprintf("%s has no verified SBOM attestation (%s): %s", r.Image, strings.Join(formats, " or "), why))
	}
	v := gates.Passed(fmt.Sprintf("%s has %d verified SBOM attestation(s)", r.Image, len(fs)))
	v.Findings = fs
	return v
}
