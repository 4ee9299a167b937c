package gatesflow

import (
	"context"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/gates/attest"
	"github.com/ripcord/ripcord/repoconfig"
)

func TestEveryConfiguredGateIsBuilt(t *testing.T) {
	t.Parallel()
	on := true
	cfg := repoconfig.Gates{
		Provenance: &repoconfig.Provenance{Keys: []string{".github/cosign.pub"}}, Values: &repoconfig.Values{}, CommitSigning: &on,
		SAST: &repoconfig.SAST{Severity: "high"}, SBOM: &repoconfig.SBOM{}, ImageScan: &repoconfig.ImageScan{Severity: "critical"},
		Process: repoconfig.Process{ITSM: &repoconfig.ITSM{BodyField: "CHG"}, QA: &repoconfig.QA{Labels: []string{"qa"}}, PolicyValidation: &repoconfig.PolicyValidation{URL: "https://policy.example"}},
	}
	var names []string
	for _, g := range build(cfg, repoconfig.Fields{}, services{}) {
		names = append(names, g.Name())
	}
	want := "provenance values commit-signing sast sbom image-scan itsm qa policy-validation"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("built %q, want %q", got, want)
	}
}

func TestRegistryGatesAreSlow(t *testing.T) {
	t.Parallel()
	for _, g := range []gates.Gate{attest.Provenance{}, attest.SBOM{}, attest.ImageScan{}} {
		if !gates.IsSlow(g) {
			t.Errorf("%s does not report in_progress first, yet it reaches a registry", g.Name())
		}
	}
}

func TestContentGatesWithoutProvenanceFailClosed(t *testing.T) {
	t.Parallel()
	trust := readTrust(context.Background(), nil, "acme/checkout", nil)
	s := gates.Subject{Image: "reg.example.com/checkout", Digest: "sha256:" + strings.Repeat("1", 64)}
	v := attest.SBOM{Source: newRegistry(nil), Trust: trust}.Evaluate(context.Background(), s)
	if v.Outcome != gates.Error || !strings.Contains(v.Summary, "gates.provenance is not configured") {
		t.Fatalf("sbom without provenance: %s %q, want error naming gates.provenance", v.Outcome, v.Summary)
	}
}
