package attest

import (
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Identity is a keyless signer: the OIDC issuer of its Fulcio certificate
// and a regexp its subject (the SAN) must match.
type Identity struct {
	Issuer        string
	SubjectRegexp string
}

// Key is one configured public key: where it came from (a path in the
// repository, or "inline") and its PEM.
type Key struct {
	Source string
	PEM    []byte
}

// Policy is the trust material signatures and attestations are checked
// with. A signature passes if any key or identity verifies it.
type Policy struct {
	Keys       []Key
	Identities []Identity
	// TrustedRoot is a Sigstore trusted_root.json (Fulcio CAs, Rekor keys),
	// required by Identities.
	TrustedRoot []byte
}

// Hash identifies the policy in the cache: a change of key, identity or
// root must not reuse an answer given under the old trust.
func (p Policy) Hash() string {
	h := sha256.New()
	for _, k := range p.Keys {
		fmt.Fprintf(h, "key %d\n%s\n", len(k.PEM), k.PEM)
	}
	for _, id := range p.Identities {
		fmt.Fprintf(h, "identity %q %q\n", id.Issuer, id.SubjectRegexp)
	}
	fmt.Fprintf(h, "root %d\n%s", len(p.TrustedRoot), p.TrustedRoot)
	return hex.EncodeToString(h.Sum(nil))
}

// trust is one way to verify: a cosign CheckOpts without the registry
// options, and a name for messages.
type trust struct {
	name string
	opts cosign.CheckOpts
}

// trusts turns the policy into cosign options, one per key plus one for
// all identities. An error names the key or field that is wrong.
func (p Policy) trusts() ([]trust, error) {
	if len(p.Keys) == 0 && len(p.Identities) == 0 {
		return nil, errors.New("no trust material: set gates.provenance.keys or gates.provenance.identities")
	}
	var out []trust
	for _, k := range p.Keys {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(k.PEM)
		if err != nil {
			return nil, fmt.Errorf("gates.provenance.keys: %s is not a PEM public key: %w", k.Source, err)
		}
		v, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("gates.provenance.keys: %s: %w", k.Source, err)
		}
		// A key needs no transparency log: the signature alone is the proof.
		out = append(out, trust{name: "key " + k.Source, opts: cosign.CheckOpts{SigVerifier: v, IgnoreTlog: true, IgnoreSCT: true, Offline: true}})
	}
	if len(p.Identities) == 0 {
		return out, nil
	}
	if len(p.TrustedRoot) == 0 {
		return nil, errors.New("gates.provenance.identities need gates.provenance.trusted_root: keyless signatures are verified offline")
	}
	tr, err := root.NewTrustedRootFromJSON(p.TrustedRoot)
	if err != nil {
		return nil, fmt.Errorf("gates.provenance.trusted_root is not a Sigstore trusted root: %w", err)
	}
	ids := make([]cosign.Identity, 0, len(p.Identities))
	for _, id := range p.Identities {
		ids = append(ids, cosign.Identity{Issuer: id.Issuer, SubjectRegExp: id.SubjectRegexp})
	}
	// Offline: the Rekor bundle the signature carries is checked with the
	// root's log keys; nothing is looked up. The certificate's embedded SCT
	// is checked against the root's CT logs; a root that names none (a
	// private Sigstore without CT) opts out of that check.
	out = append(out, trust{name: "keyless identity", opts: cosign.CheckOpts{
		TrustedMaterial: tr, Identities: ids, Offline: true, IgnoreSCT: len(tr.CTLogs()) == 0,
	}})
	return out, nil
}
