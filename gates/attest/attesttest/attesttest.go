// Package attesttest pushes images to a registry on loopback and signs and
// attests them the way cosign does (the .sig and .att tags, DSSE
// envelopes), with keys made in the test: the fixtures of the attest gates'
// tests, in and out of their package.
package attesttest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/cosign/v2/pkg/cosign/attestation"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/cosign/v2/pkg/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

const (
	// Builder and Source are what the fixtures' provenance says by default.
	Builder = "https://github.com/acme/.github/.github/workflows/build.yml@refs/heads/main"
	Source  = "github.com/acme/checkout"
)

// Signer is a cosign key pair made in the test (ECDSA P-256, as
// `cosign generate-key-pair` makes).
type Signer struct {
	sv  signature.SignerVerifier
	PEM []byte // the public key
}

func NewSigner(t testing.TB) Signer {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return Signer{sv: sv, PEM: pub}
}

// StartRegistry runs go-containerregistry's registry on loopback.
func StartRegistry(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return srv
}

// PushImage pushes a random image to repo on srv and returns it by digest.
func PushImage(t testing.TB, srv *httptest.Server, repo string) name.Digest {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	tag, err := name.NewTag(host + "/" + repo + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("push: %v", err)
	}
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(h.String())
}

// Entity is the image's signatures and attestations being assembled, to
// be written the way `cosign sign` and `cosign attest` write them.
type Entity struct {
	t  testing.TB
	d  name.Digest
	se oci.SignedEntity
}

func Signed(t testing.TB, d name.Digest) *Entity {
	t.Helper()
	se, err := ociremote.SignedEntity(d)
	if err != nil {
		t.Fatal(err)
	}
	return &Entity{t: t, d: d, se: se}
}

// Sign attaches a simple-signing signature by s; tamper, when set, edits
// the payload after it was signed.
func (e *Entity) Sign(s Signer, tamper func(string) string) *Entity {
	e.t.Helper()
	pl, err := payload.Cosign{Image: e.d}.MarshalJSON()
	if err != nil {
		e.t.Fatal(err)
	}
	sig, err := s.sv.SignMessage(bytes.NewReader(pl))
	if err != nil {
		e.t.Fatal(err)
	}
	if tamper != nil {
		pl = []byte(tamper(string(pl)))
	}
	ociSig, err := static.NewSignature(pl, base64.StdEncoding.EncodeToString(sig))
	if err != nil {
		e.t.Fatal(err)
	}
	if e.se, err = mutate.AttachSignatureToEntity(e.se, ociSig); err != nil {
		e.t.Fatal(err)
	}
	return e
}

// Attest attaches a DSSE-wrapped in-toto statement of cosign predicate
// type typ ("slsaprovenance", "slsaprovenance1", "spdxjson", "cyclonedx",
// "vuln"); tamper edits the statement after it was signed.
func (e *Entity) Attest(s Signer, typ, predicate string, tamper func(string) string) *Entity {
	e.t.Helper()
	st, err := attestation.GenerateStatement(attestation.GenerateOpts{
		Predicate: strings.NewReader(predicate), Type: typ, Digest: e.d.DigestStr()[len("sha256:"):],
		Repo: e.d.Repository.String(), Time: func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		e.t.Fatalf("statement %s: %v", typ, err)
	}
	pl, err := json.Marshal(st)
	if err != nil {
		e.t.Fatal(err)
	}
	env, err := dsse.WrapSigner(s.sv, types.IntotoPayloadType).SignMessage(bytes.NewReader(pl))
	if err != nil {
		e.t.Fatal(err)
	}
	if tamper != nil {
		env = tamperEnvelope(e.t, env, tamper)
	}
	var head struct {
		PredicateType string `json:"predicateType"`
	}
	_ = json.Unmarshal(pl, &head)
	att, err := static.NewAttestation(env, static.WithLayerMediaType(ggcrtypes.MediaType(types.DssePayloadType)),
		static.WithAnnotations(map[string]string{"predicateType": head.PredicateType}))
	if err != nil {
		e.t.Fatal(err)
	}
	if e.se, err = mutate.AttachAttestationToEntity(e.se, att); err != nil {
		e.t.Fatal(err)
	}
	return e
}

func tamperEnvelope(t testing.TB, env []byte, tamper func(string) string) []byte {
	var m map[string]any
	if err := json.Unmarshal(env, &m); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(m["payload"].(string))
	if err != nil {
		t.Fatal(err)
	}
	m["payload"] = base64.StdEncoding.EncodeToString([]byte(tamper(string(raw))))
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Push writes the .sig and .att images.
func (e *Entity) Push() {
	e.t.Helper()
	if err := ociremote.WriteSignatures(e.d.Repository, e.se); err != nil {
		e.t.Fatalf("write signatures: %v", err)
	}
	if err := ociremote.WriteAttestations(e.d.Repository, e.se); err != nil {
		e.t.Fatalf("write attestations: %v", err)
	}
}

// ProvenanceV02 is a SLSA v0.2 predicate as GitHub's generator writes it.
func ProvenanceV02(builderID, repo string) string {
	return `{"builder":{"id":"` + builderID + `"},"buildType":"https://github.com/slsa-framework/slsa-github-generator/container@v1",` +
		`"invocation":{"configSource":{"uri":"git+https://` + repo + `@refs/heads/main","digest":{"sha1":"abcdef0123456789abcdef0123456789abcdef01"},"entryPoint":".github/workflows/build.yml"}},` +
		`"materials":[{"uri":"git+https://` + repo + `@refs/heads/main"}]}`
}

// ProvenanceV1 is a SLSA v1 predicate as GitHub's builders write it.
func ProvenanceV1(builderID, repo string) string {
	return `{"buildDefinition":{"buildType":"https://actions.github.io/buildtypes/workflow/v1",` +
		`"externalParameters":{"workflow":{"ref":"refs/heads/main","repository":"https://` + repo + `","path":".github/workflows/build.yml"}},` +
		`"resolvedDependencies":[{"uri":"git+https://` + repo + `@refs/heads/main"}]},"runDetails":{"builder":{"id":"` + builderID + `"}}}`
}

// SPDXDoc is a minimal SPDX document.
const SPDXDoc = `{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","name":"checkout","packages":[]}`

// TrivyScan is a cosign vuln predicate whose result is Trivy's JSON.
func TrivyScan(vulns ...[2]string) string {
	var vs []string
	for _, v := range vulns {
		vs = append(vs, `{"VulnerabilityID":"`+v[0]+`","PkgName":"xz-libs","Severity":"`+v[1]+`"}`)
	}
	return `{"invocation":{"uri":"","event_id":"","builder.id":""},"scanner":{"uri":"pkg:github/aquasecurity/trivy@0.56.0","version":"0.56.0",` +
		`"db":{"uri":"","version":""},"result":{"SchemaVersion":2,"Results":[{"Target":"checkout","Vulnerabilities":[` + strings.Join(vs, ",") + `]}]}},` +
		`"metadata":{"scanStartedOn":"2026-11-01T00:00:00Z","scanFinishedOn":"2026-11-01T00:01:00Z"}}`
}
