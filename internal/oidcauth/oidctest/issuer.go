// Package oidctest runs a stand-in for GitHub Actions' OIDC token issuer on
// loopback, so tests of ripcord's token checks use real discovery, a real
// JWKS endpoint and really signed tokens.
package oidctest

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// JWKSPath is where the issuer publishes its keys, as GitHub does.
const JWKSPath = "/.well-known/jwks"

const discoveryPath = "/.well-known/openid-configuration"

type signingKey struct {
	kid string
	key *rsa.PrivateKey
}

// Issuer is an OIDC issuer on 127.0.0.1 that signs GitHub-like tokens with
// RSA keys made in the test. It is safe for concurrent use.
type Issuer struct {
	srv *httptest.Server
	t   testing.TB // its keys are lent to it until t ends

	mu       sync.Mutex
	keys     []signingKey // published; the last one signs
	down     bool         // every endpoint answers 503
	keysDown bool         // the JWKS endpoint answers 503
	requests int
	serial   int // numbers kids so each rotation makes a new one
}

// NewIssuer starts an issuer with one signing key; it stops when t ends.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	iss := &Issuer{t: t}
	iss.RotateKey()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("oidctest: listen on loopback: %v", err)
	}
	iss.srv = httptest.NewUnstartedServer(http.HandlerFunc(iss.serve))
	iss.srv.Listener.Close()
	iss.srv.Listener = ln
	iss.srv.Start()
	t.Cleanup(iss.srv.Close)
	return iss
}

// URL is the issuer URL: the value of its tokens' iss claim and of a
// verifier's configured issuer.
func (i *Issuer) URL() string { return i.srv.URL }

// KeyID is the kid of the key that signs new tokens.
func (i *Issuer) KeyID() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.keys[len(i.keys)-1].kid
}

// RotateKey makes a new signing key with a new kid and returns the kid.
// The old keys stay published, as GitHub keeps them while its tokens live,
// so tokens signed before the rotation still verify; to make them fail,
// RemoveKey the old kid (and note that a verifier holding the old key in
// its cache keeps accepting them until it next refetches the key set).
func (i *Issuer) RotateKey() string {
	key, err := lendKey(i.t)
	if err != nil {
		panic(err.Error())
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.serial++
	kid := fmt.Sprintf("oidctest-%d-%s", i.serial, randomID()[:8])
	i.keys = append(i.keys, signingKey{kid: kid, key: key})
	return kid
}

// RemoveKey stops publishing the key with this kid. Removing the signing
// key leaves the previous one signing; removing the last key panics, since
// an issuer with nothing to sign with is a broken test.
func (i *Issuer) RemoveKey(kid string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keys = slices.DeleteFunc(i.keys, func(k signingKey) bool { return k.kid == kid })
	if len(i.keys) == 0 {
		panic("oidctest: RemoveKey removed the last key")
	}
}

// SetDown makes every endpoint answer 503 Service Unavailable (true) or
// serve again (false).
func (i *Issuer) SetDown(down bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.down = down
}

// SetKeysDown makes only the JWKS endpoint answer 503 (true) or serve again.
func (i *Issuer) SetKeysDown(down bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keysDown = down
}

// Requests counts the HTTP requests the issuer has received, answered or not.
func (i *Issuer) Requests() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.requests
}

func (i *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	i.mu.Lock()
	i.requests++
	down := i.down || (i.keysDown && r.URL.Path == JWKSPath)
	keys := i.publicKeys()
	i.mu.Unlock()

	if down {
		http.Error(w, "issuer is down (oidctest)", http.StatusServiceUnavailable)
		return
	}
	switch r.URL.Path {
	case discoveryPath:
		writeJSON(w, i.discoveryDocument())
	case JWKSPath:
		writeJSON(w, jose.JSONWebKeySet{Keys: keys})
	default:
		http.NotFound(w, r)
	}
}

func (i *Issuer) publicKeys() []jose.JSONWebKey {
	out := make([]jose.JSONWebKey, 0, len(i.keys))
	for _, k := range i.keys {
		out = append(out, jose.JSONWebKey{Key: &k.key.PublicKey, KeyID: k.kid, Algorithm: string(jose.RS256), Use: "sig"})
	}
	return out
}

// discoveryDocument has the fields GitHub's issuer publishes.
func (i *Issuer) discoveryDocument() map[string]any {
	return map[string]any{
		"issuer":                                i.URL(),
		"jwks_uri":                              i.URL() + JWKSPath,
		"subject_types_supported":               []string{"public", "pairwise"},
		"response_types_supported":              []string{"id_token"},
		"claims_supported":                      []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository", "repository_id", "repository_owner", "run_id", "run_attempt", "actor", "workflow", "workflow_ref", "job_workflow_ref", "environment", "event_name", "sha"},
		"id_token_signing_alg_values_supported": []string{string(jose.RS256)},
		"scopes_supported":                      []string{"openid"},
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
