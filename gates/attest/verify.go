package attest

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
)

// Report is the definite evidence about one digest under one policy.
type Report struct {
	Image  string // repo@sha256:…
	Digest string
	// Missing: the registry answered that it has no such manifest.
	Missing bool
	// Signed names what verified the image's signature ("key .github/cosign.pub");
	// empty when nothing did, and SignatureProblem says why.
	Signed           string
	SignatureProblem string
	// Statements are the in-toto statements of the attestations that
	// verified; AttestationProblem says why none did.
	Statements         []Statement
	AttestationProblem string
}

// Verifier checks digests against policies, remembering definite answers.
type Verifier struct {
	registries Registries
	cache      *cache
}

// DefaultCacheSize is how many (digest, policy) reports a Verifier keeps.
const DefaultCacheSize = 512

// NewVerifier returns a verifier that reaches registries as r says and
// keeps up to size reports (DefaultCacheSize when size <= 0).
func NewVerifier(r Registries, size int) *Verifier {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Verifier{registries: r, cache: newCache(size)}
}

// Verify gathers the evidence for image (pinned by digest) under p. An
// error means it could not decide: bad trust material, a registry that did
// not answer. Concurrent calls for the same key share one verification.
func (v *Verifier) Verify(ctx context.Context, image string, p Policy) (Report, error) {
	d, err := v.registries.parseDigest(image)
	if err != nil {
		return Report{}, err
	}
	key := d.String() + " " + p.Hash()
	return v.cache.do(ctx, key, func(ctx context.Context) (Report, error) { return v.verify(ctx, d, p) })
}

func (v *Verifier) verify(ctx context.Context, d name.Digest, p Policy) (Report, error) {
	ts, err := p.trusts()
	if err != nil {
		return Report{}, err
	}
	rep := Report{Image: d.String(), Digest: d.DigestStr()}
	ok, err := v.registries.exists(ctx, d)
	if err != nil {
		return Report{}, err
	}
	if !ok {
		rep.Missing = true
		return rep, nil
	}
	h, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return Report{}, fmt.Errorf("digest %s: %w", d.DigestStr(), err)
	}
	if rep.Signed, rep.SignatureProblem, err = v.signature(ctx, d, h, ts); err != nil {
		return Report{}, err
	}
	if rep.Statements, rep.AttestationProblem, err = v.attestations(ctx, d, h, ts); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// fetch reads every signature (or attestation) under tag with its payload,
// certificate and bundle, so that verifying them afterwards touches no
// network: an error here is the registry's, an error after is a verdict.
func (v *Verifier) fetch(ctx context.Context, tag name.Tag) ([]oci.Signature, error) {
	sigs, err := ociremote.Signatures(tag, v.registries.ociOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", tag, err)
	}
	list, err := sigs.Get()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", tag, err)
	}
	out := make([]oci.Signature, 0, len(list))
	for _, s := range list {
		c, err := static.Copy(s)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", tag, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// fetched hands cosign signatures already read.
type fetched struct {
	oci.Signatures
	list []oci.Signature
}

func (f fetched) Get() ([]oci.Signature, error) { return f.list, nil }

// signature tries each trust on the image's .sig signatures; the first
// that verifies one names the signer.
func (v *Verifier) signature(ctx context.Context, d name.Digest, h v1.Hash, ts []trust) (signer, problem string, err error) {
	st, err := ociremote.SignatureTag(d, v.registries.ociOptions(ctx)...)
	if err != nil {
		return "", "", fmt.Errorf("signature tag of %s: %w", d, err)
	}
	sigs, err := v.fetch(ctx, st)
	if err != nil {
		return "", "", err
	}
	if len(sigs) == 0 {
		return "", "no cosign signature (" + st.TagStr() + " has none)", nil
	}
	var problems []string
	for _, t := range ts {
		co := t.opts
		co.ClaimVerifier = cosign.SimpleClaimVerifier
		for _, sig := range sigs {
			_, err := cosign.VerifyImageSignature(ctx, sig, h, &co)
			if err == nil {
				return t.name, "", nil
			}
			problems = append(problems, t.name+": "+oneLine(err))
		}
	}
	return "", fmt.Sprintf("none of %d signatures verified: %s", len(sigs), strings.Join(problems, "; ")), nil
}

// attestations verifies the image's .att attestations with every trust and
// keeps the statements of those that verified, each once.
func (v *Verifier) attestations(ctx context.Context, d name.Digest, h v1.Hash, ts []trust) ([]Statement, string, error) {
	at, err := ociremote.AttestationTag(d, v.registries.ociOptions(ctx)...)
	if err != nil {
		return nil, "", fmt.Errorf("attestation tag of %s: %w", d, err)
	}
	atts, err := v.fetch(ctx, at)
	if err != nil {
		return nil, "", err
	}
	if len(atts) == 0 {
		return nil, "no attestations (" + at.TagStr() + " has none)", nil
	}
	var out []Statement
	seen := map[string]bool{}
	var problems []string
	for _, t := range ts {
		co := t.opts
		co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
		checked, _, err := cosign.VerifyImageAttestation(ctx, fetched{list: atts}, h, &co)
		if err != nil {
			problems = append(problems, t.name+": "+oneLine(err))
			continue
		}
		for _, a := range checked {
			s, err := statementOf(a, t.name)
			if err != nil {
				problems = append(problems, t.name+": "+err.Error())
				continue
			}
			if !seen[s.key] {
				seen[s.key] = true
				out = append(out, s)
			}
		}
	}
	if len(out) > 0 {
		return out, "", nil
	}
	return nil, fmt.Sprintf("none of %d attestations verified: %s", len(atts), strings.Join(problems, "; ")), nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
