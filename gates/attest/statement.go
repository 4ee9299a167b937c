package attest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/sigstore/cosign/v2/pkg/oci"
)

// Predicate types the gates look for, as cosign writes them.
const (
	PredicateSLSAv02   = "https://slsa.dev/provenance/v0.2"
	PredicateSLSAv1    = "https://slsa.dev/provenance/v1"
	PredicateSPDX      = "https://spdx.dev/Document"
	PredicateCycloneDX = "https://cyclonedx.org/bom"
	PredicateVuln      = "https://cosign.sigstore.dev/attestation/vuln/v1"
)

// Statement is one verified in-toto statement about the digest.
type Statement struct {
	PredicateType string
	Predicate     json.RawMessage
	// Signer names the key or identity that verified it.
	Signer string
	key    string // the statement's hash, to count it once
}

// statementOf reads the in-toto statement out of a verified attestation's
// DSSE envelope.
func statementOf(att oci.Signature, signer string) (Statement, error) {
	p, err := att.Payload()
	if err != nil {
		return Statement{}, fmt.Errorf("attestation payload: %w", err)
	}
	var env struct {
		PayloadType string `json:"payloadType"`
		Payload     string `json:"payload"`
	}
	if err := json.Unmarshal(p, &env); err != nil {
		return Statement{}, fmt.Errorf("attestation is not a DSSE envelope: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return Statement{}, fmt.Errorf("attestation payload is not base64: %w", err)
	}
	var st struct {
		PredicateType string          `json:"predicateType"`
		Predicate     json.RawMessage `json:"predicate"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return Statement{}, fmt.Errorf("attestation payload is not an in-toto statement: %w", err)
	}
	sum := sha256.Sum256(raw)
	return Statement{PredicateType: st.PredicateType, Predicate: st.Predicate, Signer: signer, key: hex.EncodeToString(sum[:])}, nil
}

// of returns the statements of the given predicate types.
func (r Report) of(types ...string) []Statement {
	var out []Statement
	for _, s := range r.Statements {
		for _, t := range types {
			if s.PredicateType == t {
				out = append(out, s)
				break
			}
		}
	}
	return out
}
