package gatesflow

import (
	"context"
	"net/http"

	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/repoconfig"
)

// unavailable stands for a configured gate this build cannot evaluate: it
// fails closed, saying so, rather than being left out and passing by absence.
type unavailable struct {
	name  string
	class gates.Class
	why   string
}

func (u unavailable) Name() string       { return u.name }
func (u unavailable) Class() gates.Class { return u.class }
func (u unavailable) Evaluate(context.Context, gates.Subject) gates.Verdict {
	return gates.Errored(u.why)
}

// schemaFile is the values schema read at the PR's head.
type schemaFile struct {
	content []byte
	err     error
}

// build returns the gates cfg turns on, in the order check runs are listed.
func build(cfg repoconfig.Gates, fields repoconfig.Fields, schema schemaFile, gh gates.CommitVerifier, client *http.Client) []gates.Gate {
	var gs []gates.Gate
	const notAvailable = "signature and attestation verification is not available in this build of ripcord"
	if cfg.Provenance != nil {
		gs = append(gs, unavailable{gates.NameProvenance, gates.Integrity, notAvailable})
	}
	if cfg.Values != nil {
		gs = append(gs, gates.Values{SchemaPath: cfg.Values.Schema, Schema: schema.content, SchemaErr: schema.err, Fields: fields})
	}
	if cfg.CommitSigning != nil && *cfg.CommitSigning {
		gs = append(gs, gates.CommitSigning{GitHub: gh})
	}
	if cfg.SAST != nil {
		gs = append(gs, unavailable{gates.NameSAST, gates.Content, "code-scanning alerts are not read in this build of ripcord"})
	}
	if cfg.SBOM != nil {
		gs = append(gs, unavailable{gates.NameSBOM, gates.Content, notAvailable})
	}
	if cfg.ImageScan != nil {
		gs = append(gs, unavailable{gates.NameImageScan, gates.Content, notAvailable})
	}
	if p := cfg.Process.ITSM; p != nil {
		gs = append(gs, gates.ITSM{BodyField: p.BodyField})
	}
	if p := cfg.Process.QA; p != nil {
		gs = append(gs, gates.QA{Labels: p.Labels})
	}
	if p := cfg.Process.PolicyValidation; p != nil {
		gs = append(gs, gates.PolicyValidation{URL: p.URL, Timeout: p.Timeout, Client: client})
	}
	return gs
}
