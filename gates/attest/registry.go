package attest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
)

// Registries says how registries are reached.
type Registries struct {
	// Insecure hosts (host or host:port) are reached over plain HTTP.
	Insecure []string
	// Keychain gives credentials per registry; nil: anonymous.
	Keychain authn.Keychain
	// Transport carries the requests; nil: http.DefaultTransport.
	Transport http.RoundTripper
}

// parseDigest reads an image pinned by digest, "host/repo@sha256:…".
func (r Registries) parseDigest(image string) (name.Digest, error) {
	var opts []name.Option
	host := image
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	for _, h := range r.Insecure {
		if strings.EqualFold(h, host) {
			opts = append(opts, name.Insecure)
		}
	}
	d, err := name.NewDigest(image, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image %q is not pinned by digest (repo@sha256:…): %w", image, err)
	}
	return d, nil
}

func (r Registries) remoteOptions(ctx context.Context) []remote.Option {
	kc := r.Keychain
	if kc == nil {
		kc = authn.NewMultiKeychain() // anonymous everywhere
	}
	t := r.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(t)}
}

func (r Registries) ociOptions(ctx context.Context) []ociremote.Option {
	return []ociremote.Option{ociremote.WithRemoteOptions(r.remoteOptions(ctx)...)}
}

// exists asks the registry for the digest's manifest. False with no error
// means the registry answered that it has no such manifest or repository.
func (r Registries) exists(ctx context.Context, d name.Digest) (bool, error) {
	_, err := remote.Head(d, r.remoteOptions(ctx)...)
	if err == nil {
		return true, nil
	}
	if notFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("registry %s: %w", d.RegistryStr(), err)
}

// notFound reports a registry's definite "no such thing": 404, or the
// MANIFEST_UNKNOWN / NAME_UNKNOWN codes some registries send with it.
func notFound(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusNotFound {
		return true
	}
	for _, e := range te.Errors {
		if e.Code == transport.ManifestUnknownErrorCode || e.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}

// DockerConfig is a keychain read from a docker config.json: the "auths"
// entries, by registry host ("auth" as base64 user:password, or "username"
// and "password"). Credential helpers are not run.
type DockerConfig map[string]authn.AuthConfig

// LoadDockerConfig reads path; an empty path is an empty keychain.
func LoadDockerConfig(path string) (DockerConfig, error) {
	if path == "" {
		return DockerConfig{}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registries.auth: %w", err)
	}
	var f struct {
		Auths map[string]struct {
			Auth, Username, Password string
		} `json:"auths"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("registries.auth: %s is not a docker config.json: %w", path, err)
	}
	out := DockerConfig{}
	for host, a := range f.Auths {
		c := authn.AuthConfig{Username: a.Username, Password: a.Password}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			user, pass, ok := strings.Cut(string(raw), ":")
			if err != nil || !ok {
				return nil, fmt.Errorf("registries.auth: auths[%q].auth is not base64 of user:password", host)
			}
			c = authn.AuthConfig{Username: user, Password: pass}
		}
		out[hostOf(host)] = c
	}
	return out, nil
}

// Resolve implements authn.Keychain.
func (c DockerConfig) Resolve(res authn.Resource) (authn.Authenticator, error) {
	host := res.RegistryStr()
	a, ok := c[host]
	if !ok && host == name.DefaultRegistry {
		a, ok = c["docker.io"]
	}
	if !ok {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(a), nil
}

// hostOf turns an auths key ("https://host/v1/", "host") into the host.
func hostOf(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	if i := strings.IndexByte(key, '/'); i >= 0 {
		key = key[:i]
	}
	return key
}
