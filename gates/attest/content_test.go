package attest

import (
	"context"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/gates/attest/attesttest"
)

func TestSBOMGate(t *testing.T) {
	srv := startRegistry(t)
	key, other := newSigner(t), newSigner(t)
	const cyclone = `{"bomFormat":"CycloneDX","specVersion":"1.5","components":[]}`
	cases := []struct {
		name    string
		attach  func(e *attesttest.Entity)
		formats []string
		want    gates.Outcome
		because string
	}{
		{"SPDX attestation passes", func(e *attesttest.Entity) { e.Attest(key.Signer, "spdxjson", spdxDoc, nil) }, []string{"spdx", "cyclonedx"}, gates.Pass, PredicateSPDX},
		{"CycloneDX attestation passes", func(e *attesttest.Entity) { e.Attest(key.Signer, "cyclonedx", cyclone, nil) }, nil, gates.Pass, PredicateCycloneDX},
		{"CycloneDX when only SPDX is accepted fails", func(e *attesttest.Entity) { e.Attest(key.Signer, "cyclonedx", cyclone, nil) }, []string{"spdx"}, gates.Fail, "no verified SBOM attestation (spdx)"},
		{"SBOM signed by another key fails", func(e *attesttest.Entity) { e.Attest(other.Signer, "spdxjson", spdxDoc, nil) }, nil, gates.Fail, "none of 1 attestations verified"},
		{"SBOM edited after signing fails", func(e *attesttest.Entity) {
			e.Attest(key.Signer, "spdxjson", spdxDoc, func(p string) string { return strings.Replace(p, `"packages":[]`, `"packages":[{}]`, 1) })
		}, nil, gates.Fail, "none of 1 attestations verified"},
		{"provenance alone is no SBOM", func(e *attesttest.Entity) {
			e.Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil)
		}, nil, gates.Fail, "other predicate types"},
		{"no attestations at all fails", func(e *attesttest.Entity) {}, nil, gates.Fail, "no attestations"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := pushImage(t, srv, "acme/checkout")
			e := signedEntity(t, d).Sign(key.Signer, nil)
			c.attach(e)
			e.Push()
			v := SBOM{Source: NewVerifier(Registries{}, 0), Trust: Trust{Policy: key.policy()}, Formats: c.formats}.Evaluate(context.Background(), subjectOf(d.String()))
			if v.Outcome != c.want || !mentions(v, c.because) {
				t.Fatalf("verdict %s %q %+v, want %s mentioning %q", v.Outcome, v.Summary, v.Findings, c.want, c.because)
			}
		})
	}
}

func TestImageScanGate(t *testing.T) {
	srv := startRegistry(t)
	key := newSigner(t)
	cases := []struct {
		name     string
		scans    []string
		severity string
		allow    []string
		want     gates.Outcome
		because  string
	}{
		{"clean scan passes", []string{trivyScan()}, "critical", nil, gates.Pass, "no vulnerability at or above critical"},
		{"critical vulnerability fails", []string{trivyScan([2]string{"CVE-2024-3094", "CRITICAL"})}, "critical", nil, gates.Fail, "CVE-2024-3094"},
		{"high vulnerability under a critical threshold passes", []string{trivyScan([2]string{"CVE-2023-0001", "HIGH"})}, "critical", nil, gates.Pass, "no vulnerability"},
		{"high vulnerability under a high threshold fails", []string{trivyScan([2]string{"CVE-2023-0001", "HIGH"})}, "high", nil, gates.Fail, "CVE-2023-0001"},
		{"allowed critical vulnerability passes", []string{trivyScan([2]string{"CVE-2024-3094", "CRITICAL"})}, "critical", []string{"CVE-2024-3094"}, gates.Pass, "1 allowed"},
		{"allow-list does not hide another vulnerability", []string{trivyScan([2]string{"CVE-2024-3094", "CRITICAL"}, [2]string{"CVE-2024-6387", "CRITICAL"})}, "critical", []string{"CVE-2024-3094"}, gates.Fail, "CVE-2024-6387"},
		{"unknown severity counts as critical", []string{trivyScan([2]string{"CVE-2026-9999", "UNKNOWN"})}, "critical", nil, gates.Fail, "CVE-2026-9999"},
		{"an older scan's finding is not hidden by a newer clean one", []string{trivyScan(), trivyScan([2]string{"CVE-2024-3094", "CRITICAL"})}, "high", nil, gates.Fail, "CVE-2024-3094"},
		{"no vulnerability scan fails", nil, "critical", nil, gates.Fail, "no verified vulnerability scan"},
		{"scan result in an unknown form cannot decide", []string{`{"scanner":{"uri":"pkg:example/scanner","result":{"findings":[]}}}`}, "critical", nil, gates.Error, "neither Trivy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := pushImage(t, srv, "acme/checkout")
			e := signedEntity(t, d).Sign(key.Signer, nil)
			for _, s := range c.scans {
				e.Attest(key.Signer, "vuln", s, nil)
			}
			e.Push()
			g := ImageScan{Source: NewVerifier(Registries{}, 0), Trust: Trust{Policy: key.policy()}, Severity: c.severity, Allow: c.allow}
			v := g.Evaluate(context.Background(), subjectOf(d.String()))
			if v.Outcome != c.want || !mentions(v, c.because) {
				t.Fatalf("verdict %s %q %+v, want %s mentioning %q", v.Outcome, v.Summary, v.Findings, c.want, c.because)
			}
		})
	}
}

func TestGrypeScanResultIsRead(t *testing.T) {
	pred := `{"scanner":{"uri":"pkg:github/anchore/grype@0.80.0","result":{"matches":[{"vulnerability":{"id":"GHSA-xxxx","severity":"High"},"artifact":{"name":"openssl"}}]}}}`
	r := Report{Image: "reg/checkout@sha256:1", Statements: []Statement{{PredicateType: PredicateVuln, Predicate: []byte(pred)}}}
	v := JudgeScan(r, "high", nil)
	if v.Outcome != gates.Fail || !mentions(v, "GHSA-xxxx") {
		t.Fatalf("verdict %s %q %+v, want the Grype match reported", v.Outcome, v.Summary, v.Findings)
	}
}

func TestBadThresholdCannotDecide(t *testing.T) {
	if v := JudgeScan(Report{}, "severe", nil); v.Outcome != gates.Error || !strings.Contains(v.Summary, "gates.image_scan.severity") {
		t.Fatalf("verdict %s %q, want error naming gates.image_scan.severity", v.Outcome, v.Summary)
	}
}

func TestSameRepository(t *testing.T) {
	for _, c := range []struct {
		uri  string
		same bool
	}{
		{"git+https://github.com/acme/checkout@refs/heads/main", true},
		{"https://github.com/Acme/Checkout.git", true},
		{"https://github.com/acme/checkout-fork", false},
		{"https://github.com/acme/checkout/../payments", false},
	} {
		if got := SameRepository(c.uri, source); got != c.same {
			t.Errorf("SameRepository(%q, %q) = %v, want %v", c.uri, source, got, c.same)
		}
	}
}
