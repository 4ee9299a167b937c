package attest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	cbundle "github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

const issuer = "https://token.actions.githubusercontent.com"

// keylessSign signs d as `cosign sign` does keylessly: a short-lived
// certificate for identity from vs's virtual Fulcio, and the Rekor bundle
// (signed entry timestamp) of log's virtual Rekor, so it verifies offline.
func keylessSign(t *testing.T, vs, log *ca.VirtualSigstore, d name.Digest, identity string, withBundle bool) {
	t.Helper()
	leaf, priv, err := vs.GenerateLeafCert(identity, issuer)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadSignerVerifier(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := payload.Cosign{Image: d}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := sv.SignMessage(bytes.NewReader(pl))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := cryptoutils.MarshalCertificateToPEM(leaf)
	if err != nil {
		t.Fatal(err)
	}
	fulcio := vs.FulcioCertificateAuthorities()[0].(*root.FulcioCertificateAuthority)
	chainPEM, err := cryptoutils.MarshalCertificatesToPEM(append(append([]*x509.Certificate{}, fulcio.Intermediates...), fulcio.Root))
	if err != nil {
		t.Fatal(err)
	}
	b64sig := base64.StdEncoding.EncodeToString(sig)
	sum := sha256.Sum256(pl)
	body, _ := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(sum[:])}},
		"signature": map[string]any{"content": b64sig, "publicKey": map[string]any{"content": base64.StdEncoding.EncodeToString(certPEM)}},
	}})
	logID, err := log.RekorLogID()
	if err != nil {
		t.Fatal(err)
	}
	entry := tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: time.Now().Unix(), LogIndex: 7, LogID: logID}
	set, err := log.RekorSignPayload(entry)
	if err != nil {
		t.Fatal(err)
	}
	rb := &cbundle.RekorBundle{SignedEntryTimestamp: set, Payload: cbundle.RekorPayload{Body: entry.Body, IntegratedTime: entry.IntegratedTime, LogIndex: entry.LogIndex, LogID: entry.LogID}}
	opts := []static.Option{static.WithCertChain(certPEM, chainPEM)}
	if withBundle {
		opts = append(opts, static.WithBundle(rb))
	}
	ociSig, err := static.NewSignature(pl, b64sig, opts...)
	if err != nil {
		t.Fatal(err)
	}
	se, err := ociremote.SignedEntity(d)
	if err != nil {
		t.Fatal(err)
	}
	if se, err = mutate.AttachSignatureToEntity(se, ociSig); err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteSignatures(d.Repository, se); err != nil {
		t.Fatal(err)
	}
}

// trustedRootJSON is the virtual Sigstore's trusted_root.json with the
// given CT logs (the virtual Fulcio embeds no SCT).
func trustedRootJSON(t *testing.T, vs *ca.VirtualSigstore, ctlogs map[string]*root.TransparencyLog) []byte {
	// The virtual log's ID is the hex text's bytes; a trusted_root.json
	// carries the raw key id, which is what cosign's bundles name.
	logs := map[string]*root.TransparencyLog{}
	for id, l := range vs.RekorLogs() {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		fixed := *l
		fixed.ID = raw
		logs[id] = &fixed
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), ctlogs, nil, logs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKeylessSignature(t *testing.T) {
	srv := startRegistry(t)
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	const workflow = "https://github.com/acme/checkout/.github/workflows/build.yml@refs/heads/main"
	cases := []struct {
		name     string
		identity string
		signWith *ca.VirtualSigstore
		bundle   bool
		ctlogs   map[string]*root.TransparencyLog
		signed   bool
		because  string
	}{
		{"identity matching the regexp verifies", workflow, vs, true, nil, true, ""},
		{"identity of another organisation fails", "https://github.com/mallory/checkout/.github/workflows/build.yml@refs/heads/main", vs, true, nil, false, "none of the expected identities matched"},
		{"certificate from a Fulcio outside the trusted root fails", workflow, other, true, nil, false, "certificate"},
		{"signature without a Rekor bundle fails offline", workflow, vs, false, nil, false, "offline verification failed"},
		{"root with CT logs requires the certificate's SCT", workflow, vs, true, vs.CTLogs(), false, "SCT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := pushImage(t, srv, "acme/checkout")
			keylessSign(t, c.signWith, vs, d, c.identity, c.bundle)
			p := Policy{Identities: []Identity{{Issuer: issuer, SubjectRegexp: "^https://github.com/acme/"}}, TrustedRoot: trustedRootJSON(t, vs, c.ctlogs)}
			r, err := NewVerifier(Registries{}, 0).Verify(context.Background(), d.String(), p)
			if err != nil {
				t.Fatal(err)
			}
			if (r.Signed != "") != c.signed || !strings.Contains(r.SignatureProblem, c.because) {
				t.Fatalf("signed by %q, problem %q; want signed=%v mentioning %q", r.Signed, r.SignatureProblem, c.signed, c.because)
			}
		})
	}
}

func TestTrustedRootThatIsNotOneCannotDecide(t *testing.T) {
	p := Policy{Identities: []Identity{{Issuer: issuer, SubjectRegexp: "^https://github.com/acme/"}}, TrustedRoot: []byte(`{"mediaType":"nope"}`)}
	_, err := NewVerifier(Registries{}, 0).Verify(context.Background(), "127.0.0.1:1/acme/checkout@sha256:"+strings.Repeat("1", 64), p)
	if err == nil || !strings.Contains(err.Error(), "gates.provenance.trusted_root") {
		t.Fatalf("error %v, want one naming gates.provenance.trusted_root", err)
	}
}
