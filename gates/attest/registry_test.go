package attest

import (
	"context"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/ripcord/ripcord/gates"
)

// behindAuth serves one registry twice: open (for the test to push to)
// and behind HTTP basic auth, as a private registry is.
func behindAuth(t *testing.T, user, pass string) (open, private *httptest.Server) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	open = httptest.NewServer(reg)
	t.Cleanup(open.Close)
	private = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(private.Close)
	return open, private
}

func TestRegistryCredentialsFromDockerConfig(t *testing.T) {
	open, private := behindAuth(t, "ripcord", "s3cret")
	host := strings.TrimPrefix(private.URL, "http://")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte("ripcord:s3cret"))
	if err := os.WriteFile(cfg, []byte(`{"auths":{"`+host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	kc, err := LoadDockerConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := newSigner(t)
	pushed := pushImage(t, open, "acme/checkout")
	signedEntity(t, pushed).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
	d, err := name.NewDigest(host + "/acme/checkout@" + pushed.DigestStr())
	if err != nil {
		t.Fatal(err)
	}

	g := func(r Registries) gates.Verdict {
		return Provenance{Source: NewVerifier(r, 0), Trust: Trust{Policy: key.policy()}, BuilderID: builder}.Evaluate(context.Background(), subjectOf(d.String()))
	}
	if v := g(Registries{Keychain: kc}); v.Outcome != gates.Pass {
		t.Fatalf("with registries.auth: %s %q", v.Outcome, v.Summary)
	}
	if v := g(Registries{}); v.Outcome != gates.Error || !strings.Contains(v.Summary, "401") && !strings.Contains(v.Summary, "UNAUTHORIZED") {
		t.Fatalf("anonymous on a private registry: %s %q, want error naming the refusal", v.Outcome, v.Summary)
	}
}

func TestDockerConfigThatIsNotOneIsRejected(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"auths":{"reg.example.com":{"auth":"bm9jb2xvbg=="}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDockerConfig(cfg); err == nil || !strings.Contains(err.Error(), `auths["reg.example.com"].auth`) {
		t.Fatalf("error %v, want one naming the entry whose auth is not user:password", err)
	}
}

func TestInsecureHostsAreReachedOverHTTP(t *testing.T) {
	r := Registries{Insecure: []string{"registry.internal:5000"}}
	for image, scheme := range map[string]string{
		"registry.internal:5000/acme/checkout@sha256:" + strings.Repeat("1", 64): "http",
		"registry.example.com/acme/checkout@sha256:" + strings.Repeat("1", 64):   "https",
	} {
		d, err := r.parseDigest(image)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Registry.Scheme(); got != scheme {
			t.Errorf("%s: scheme %s, want %s", image, got, scheme)
		}
	}
}
