package attest

import (
	"context"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/gates"
)

func subjectOf(image string) gates.Subject {
	i := strings.LastIndexByte(image, '@')
	return gates.Subject{App: "checkout", Environment: "prod", Image: image, Digest: image[i+1:]}
}

func TestProvenanceGate(t *testing.T) {
	srv := startRegistry(t)
	key, other := newSigner(t), newSigner(t)
	cases := []struct {
		name    string
		setup   func(t *testing.T) string // returns the image by digest
		policy  func() Policy
		want    gates.Outcome
		because string // a phrase the summary or a finding must hold
	}{
		{"signed image with matching provenance passes", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
			return d.String()
		}, key.policy, gates.Pass, "built by " + builder},
		{"SLSA v1 provenance passes", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance1", provenanceV1(builder, source), nil).Push()
			return d.String()
		}, key.policy, gates.Pass, "https://slsa.dev/provenance/v1"},
		{"unsigned image fails", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
			return d.String()
		}, key.policy, gates.Fail, "no cosign signature"},
		{"signature by another key fails", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(other.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
			return d.String()
		}, key.policy, gates.Fail, "none of 1 signatures verified"},
		{"signature payload edited after signing fails", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(key.Signer, func(p string) string {
				return strings.Replace(p, "cosign container image signature", "cosign container image signaturE", 1)
			}).
				Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
			return d.String()
		}, key.policy, gates.Fail, "none of 1 signatures verified"},
		{"provenance edited after signing to name the right builder fails", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02("https://evil.example/builder", source),
				func(p string) string { return strings.Replace(p, "https://evil.example/builder", builder, 1) }).Push()
			return d.String()
		}, key.policy, gates.Fail, "no verified SLSA provenance"},
		{"provenance signed by another key fails", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(key.Signer, nil).Attest(other.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
			return d.String()
		}, key.policy, gates.Fail, "no verified SLSA provenance"},
		{"signed image without provenance fails", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(key.Signer, nil).Push()
			return d.String()
		}, key.policy, gates.Fail, "no attestations"},
		{"wrong builder fails", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02("https://github.com/mallory/.github/.github/workflows/build.yml@refs/heads/main", source), nil).Push()
			return d.String()
		}, key.policy, gates.Fail, "builder id is"},
		{"wrong source repository fails", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, "github.com/acme/payments"), nil).Push()
			return d.String()
		}, key.policy, gates.Fail, "source repository is"},
		{"digest missing from the registry fails", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			return d.Context().String() + "@sha256:" + strings.Repeat("4", 64)
		}, key.policy, gates.Fail, "is not in its registry"},
		{"key that is not PEM cannot decide", func(t *testing.T) string {
			return pushImage(t, srv, "acme/checkout").String()
		}, func() Policy { return Policy{Keys: []Key{{Source: ".github/cosign.pub", PEM: []byte("not a key")}}} }, gates.Error, ".github/cosign.pub is not a PEM public key"},
		{"no keys and no identities cannot decide", func(t *testing.T) string {
			return pushImage(t, srv, "acme/checkout").String()
		}, func() Policy { return Policy{} }, gates.Error, "no trust material"},
		{"identities without a trusted root cannot decide", func(t *testing.T) string {
			return pushImage(t, srv, "acme/checkout").String()
		}, func() Policy {
			return Policy{Identities: []Identity{{Issuer: "https://token.actions.githubusercontent.com", SubjectRegexp: "^https://github.com/acme/"}}}
		}, gates.Error, "need gates.provenance.trusted_root"},
		{"a second key in the policy verifies", func(t *testing.T) string {
			d := pushImage(t, srv, "acme/checkout")
			signedEntity(t, d).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
			return d.String()
		}, func() Policy {
			return Policy{Keys: []Key{{Source: "old.pub", PEM: other.PEM}, {Source: "new.pub", PEM: key.PEM}}}
		}, gates.Pass, "key new.pub"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			image := c.setup(t)
			g := Provenance{Source: NewVerifier(Registries{}, 0), Trust: Trust{Policy: c.policy()}, BuilderID: builder, SourceRepository: source}
			v := g.Evaluate(context.Background(), subjectOf(image))
			t.Logf("%s: %s", v.Outcome, v.Summary)
			if v.Outcome != c.want || !mentions(v, c.because) {
				t.Fatalf("verdict %s %q %+v, want %s mentioning %q", v.Outcome, v.Summary, v.Findings, c.want, c.because)
			}
		})
	}
}

func TestRegistryDownCannotDecide(t *testing.T) {
	srv := startRegistry(t)
	key := newSigner(t)
	d := pushImage(t, srv, "acme/checkout")
	signedEntity(t, d).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
	srv.Close()
	v := Provenance{Source: NewVerifier(Registries{}, 0), Trust: Trust{Policy: key.policy()}, BuilderID: builder}.
		Evaluate(context.Background(), subjectOf(d.String()))
	if v.Outcome != gates.Error || !strings.Contains(v.Summary, "could not verify") {
		t.Fatalf("verdict %s %q, want error: a registry that does not answer decides nothing", v.Outcome, v.Summary)
	}
}

func TestReleaseWithoutDigestCannotDecide(t *testing.T) {
	v := Provenance{Source: NewVerifier(Registries{}, 0), Trust: Trust{Policy: newSigner(t).policy()}}.
		Evaluate(context.Background(), gates.Subject{Image: "reg.example.com/checkout:1.4.0"})
	if v.Outcome != gates.Error || !strings.Contains(v.Summary, "pins no image digest") {
		t.Fatalf("verdict %s %q, want error naming the missing digest", v.Outcome, v.Summary)
	}
}

func TestUnreadableKeyFileCannotDecide(t *testing.T) {
	v := SBOM{Source: NewVerifier(Registries{}, 0), Trust: Trust{Err: errTest("read .github/cosign.pub: no such file")}}.
		Evaluate(context.Background(), subjectOf("127.0.0.1:1/acme/checkout@sha256:"+strings.Repeat("1", 64)))
	if v.Outcome != gates.Error || !strings.Contains(v.Summary, ".github/cosign.pub") {
		t.Fatalf("verdict %s %q, want error naming the key file", v.Outcome, v.Summary)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

func mentions(v gates.Verdict, s string) bool {
	if strings.Contains(v.Summary, s) {
		return true
	}
	for _, f := range v.Findings {
		if strings.Contains(f.Message, s) || strings.Contains(f.ID, s) {
			return true
		}
	}
	return false
}
