package gatesflow

import (
	"net/http"

	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/gates/attest"
	"github.com/ripcord/ripcord/repoconfig"
)

// schemaFile is the values schema read from the default branch.
type schemaFile struct {
	content []byte
	err     error
}

// services are what the gates reach: GitHub, registries, a policy service,
// and the files of the repository they read their trust from.
type services struct {
	schema   schemaFile
	commits  gates.CommitVerifier
	scanning gates.CodeScanning
	client   *http.Client
	// registry verifies digests; trust is gates.provenance's trust
	// material, which sbom and image-scan verify their attestations with.
	registry attest.Source
	trust    attest.Trust
}

// build returns the gates cfg turns on, in the order check runs are listed.
func build(cfg repoconfig.Gates, fields repoconfig.Fields, sv services) []gates.Gate {
	var gs []gates.Gate
	if p := cfg.Provenance; p != nil {
		gs = append(gs, attest.Provenance{Source: sv.registry, Trust: sv.trust, BuilderID: p.BuilderID, SourceRepository: p.SourceRepository})
	}
	if cfg.Values != nil {
		gs = append(gs, gates.Values{SchemaPath: cfg.Values.Schema, Schema: sv.schema.content, SchemaErr: sv.schema.err, Fields: fields})
	}
	if cfg.CommitSigning != nil && *cfg.CommitSigning {
		gs = append(gs, gates.CommitSigning{GitHub: sv.commits})
	}
	if p := cfg.SAST; p != nil {
		gs = append(gs, gates.SAST{GitHub: sv.scanning, Severity: p.Severity})
	}
	if p := cfg.SBOM; p != nil {
		gs = append(gs, attest.SBOM{Source: sv.registry, Trust: sv.trust, Formats: p.Formats})
	}
	if p := cfg.ImageScan; p != nil {
		gs = append(gs, attest.ImageScan{Source: sv.registry, Trust: sv.trust, Severity: p.Severity, Allow: p.Allow})
	}
	if p := cfg.Process.ITSM; p != nil {
		gs = append(gs, gates.ITSM{BodyField: p.BodyField})
	}
	if p := cfg.Process.QA; p != nil {
		gs = append(gs, gates.QA{Labels: p.Labels})
	}
	if p := cfg.Process.PolicyValidation; p != nil {
		gs = append(gs, gates.PolicyValidation{URL: p.URL, Timeout: p.Timeout, Client: sv.client})
	}
	return gs
}

// CheckNames are the check run names (ripcord/<gate>) of the gates cfg
// turns on, in the order build returns them: the runs one evaluation under
// cfg reports.
func CheckNames(cfg repoconfig.Gates) []string {
	var out []string
	for _, g := range build(cfg, repoconfig.Fields{}, services{}) {
		out = append(out, gates.CheckName(g.Name()))
	}
	return out
}
