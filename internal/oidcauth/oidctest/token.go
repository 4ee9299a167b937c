package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Defaults of every token, GitHub-like: a push to main of acme/checkout
// running its deploy workflow.
const (
	Audience   = "https://ripcord.example" // aud; configure the verifier under test with it
	Repository = "acme/checkout"
	Subject    = "repo:acme/checkout:ref:refs/heads/main"
	RunID      = "9876543210"
	SHA        = "4f2c9d1e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d"
	Lifetime   = 5 * time.Minute // exp - iat, as GitHub issues them
)

// DefaultClaims returns the non-time claims every token carries unless
// overridden; iss, aud, iat, nbf, exp and jti are added when signing.
func DefaultClaims() map[string]any {
	const workflowRef = "acme/checkout/.github/workflows/deploy.yml@refs/heads/main"
	return map[string]any{
		"sub":                   Subject,
		"ref":                   "refs/heads/main",
		"ref_type":              "branch",
		"ref_protected":         "true",
		"sha":                   SHA,
		"repository":            Repository,
		"repository_id":         "123456789",
		"repository_owner":      "acme",
		"repository_owner_id":   "4242",
		"repository_visibility": "private",
		"run_id":                RunID,
		"run_number":            "42",
		"run_attempt":           "1",
		"runner_environment":    "github-hosted",
		"actor":                 "octocat",
		"actor_id":              "583231",
		"workflow":              "deploy",
		"workflow_ref":          workflowRef,
		"workflow_sha":          SHA,
		"job_workflow_ref":      workflowRef,
		"job_workflow_sha":      SHA,
		"event_name":            "push",
	}
}

// Option changes how Token builds or signs a token.
type Option func(*tokenSpec)

type tokenSpec struct {
	audience  []string
	issuedAt  time.Time
	notBefore *time.Time
	expiry    *time.Time
	issuer    *string
	key       *rsa.PrivateKey
	kid       *string
	algNone   bool
}

// WithAudience sets aud; one value is written as a string, several as a list.
func WithAudience(aud ...string) Option { return func(s *tokenSpec) { s.audience = aud } }

// WithIssuedAt sets iat and, unless set on their own, nbf to it and exp to it plus Lifetime.
func WithIssuedAt(t time.Time) Option { return func(s *tokenSpec) { s.issuedAt = t } }

// WithNotBefore sets nbf.
func WithNotBefore(t time.Time) Option { return func(s *tokenSpec) { s.notBefore = &t } }

// WithExpiry sets exp.
func WithExpiry(t time.Time) Option { return func(s *tokenSpec) { s.expiry = &t } }

// WithIssuer sets the iss claim to another URL, to forge a wrong issuer.
func WithIssuer(iss string) Option { return func(s *tokenSpec) { s.issuer = &iss } }

// WithSigningKey signs with a key the issuer does not publish, to forge a
// signature; the kid header stays the issuer's current kid unless WithKeyID.
func WithSigningKey(key *rsa.PrivateKey) Option { return func(s *tokenSpec) { s.key = key } }

// WithKeyID sets the kid header; "" leaves it out.
func WithKeyID(kid string) Option { return func(s *tokenSpec) { s.kid = &kid } }

// WithAlgNone makes an unsigned token: header alg "none", empty signature.
func WithAlgNone() Option { return func(s *tokenSpec) { s.algNone = true } }

// Token signs a token. claims are laid over the defaults (DefaultClaims and
// the options' iss, aud and times); a nil value removes that claim.
func (i *Issuer) Token(t testing.TB, claims map[string]any, opts ...Option) string {
	t.Helper()
	spec := tokenSpec{audience: []string{Audience}, issuedAt: time.Now()}
	for _, opt := range opts {
		opt(&spec)
	}
	payload := i.payload(spec)
	for name, value := range claims {
		if value == nil {
			delete(payload, name)
			continue
		}
		payload[name] = value
	}
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatalf("oidctest: encode claims: %v", err)
	}
	if spec.algNone {
		return unsigned(body)
	}
	token, err := i.sign(spec, body)
	if err != nil {
		t.Fatalf("oidctest: sign token: %v", err)
	}
	return token
}

func (i *Issuer) payload(spec tokenSpec) map[string]any {
	payload := DefaultClaims()
	payload["iss"] = i.URL()
	if spec.issuer != nil {
		payload["iss"] = *spec.issuer
	}
	if len(spec.audience) == 1 {
		payload["aud"] = spec.audience[0]
	} else {
		payload["aud"] = spec.audience
	}
	nbf, exp := spec.issuedAt, spec.issuedAt.Add(Lifetime)
	if spec.notBefore != nil {
		nbf = *spec.notBefore
	}
	if spec.expiry != nil {
		exp = *spec.expiry
	}
	payload["iat"] = spec.issuedAt.Unix()
	payload["nbf"] = nbf.Unix()
	payload["exp"] = exp.Unix()
	payload["jti"] = randomID()
	return payload
}

func (i *Issuer) sign(spec tokenSpec, payload []byte) (string, error) {
	i.mu.Lock()
	current := i.keys[len(i.keys)-1]
	i.mu.Unlock()
	key, kid := current.key, current.kid
	if spec.key != nil {
		key = spec.key
	}
	if spec.kid != nil {
		kid = *spec.kid
	}
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

func unsigned(payload []byte) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc.EncodeToString(payload) + "."
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewKey is an RSA key no issuer publishes while t runs, for
// WithSigningKey.
func NewKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	key, err := lendKey(t)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
