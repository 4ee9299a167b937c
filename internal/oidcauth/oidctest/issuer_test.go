package oidctest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && into != nil {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func publishedKeys(t *testing.T, iss *Issuer) jose.JSONWebKeySet {
	t.Helper()
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	getJSON(t, iss.URL()+"/.well-known/openid-configuration", &doc)
	if doc.Issuer != iss.URL() {
		t.Fatalf("discovery issuer = %q, want %q", doc.Issuer, iss.URL())
	}
	var set jose.JSONWebKeySet
	if code := getJSON(t, doc.JWKSURI, &set); code != http.StatusOK {
		t.Fatalf("GET jwks_uri = %d", code)
	}
	return set
}

// verifies reports whether token is signed by a key iss publishes now.
func verifies(t *testing.T, iss *Issuer, token string) bool {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	set := publishedKeys(t, iss)
	for _, key := range set.Key(jws.Signatures[0].Header.KeyID) {
		if _, err := jws.Verify(key); err == nil {
			return true
		}
	}
	return false
}

func payloadOf(t *testing.T, token string) map[string]any {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.RS256, "none"})
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

func TestTokenIsSignedByAPublishedKeyWithGitHubClaims(t *testing.T) {
	iss := NewIssuer(t)
	token := iss.Token(t, nil)
	if !verifies(t, iss, token) {
		t.Fatal("token does not verify with the issuer's published keys")
	}
	claims := payloadOf(t, token)
	want := map[string]any{"iss": iss.URL(), "aud": Audience, "repository": Repository, "sub": Subject, "run_id": RunID, "run_attempt": "1"}
	for name, value := range want {
		if claims[name] != value {
			t.Errorf("claim %s = %v, want %v", name, claims[name], value)
		}
	}
	if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != Lifetime.Seconds() {
		t.Errorf("exp - iat = %v s, want %v", exp-iat, Lifetime.Seconds())
	}
}

func TestClaimsMapOverridesAndRemovesDefaults(t *testing.T) {
	iss := NewIssuer(t)
	claims := payloadOf(t, iss.Token(t, map[string]any{"repository": "acme/shop", "environment": "production", "run_attempt": nil}))
	if claims["repository"] != "acme/shop" || claims["environment"] != "production" {
		t.Errorf("overrides not applied: %v", claims)
	}
	if _, ok := claims["run_attempt"]; ok {
		t.Error("run_attempt set to nil is still in the token")
	}
}

func TestOptionsSetTimesAudienceAndIssuer(t *testing.T) {
	iss := NewIssuer(t)
	at := time.Unix(1_700_000_000, 0)
	claims := payloadOf(t, iss.Token(t, nil, WithIssuedAt(at), WithNotBefore(at.Add(-time.Minute)),
		WithAudience("a", "b"), WithIssuer("https://elsewhere.example")))
	if claims["iat"] != float64(at.Unix()) || claims["nbf"] != float64(at.Unix()-60) || claims["exp"] != float64(at.Add(Lifetime).Unix()) {
		t.Errorf("times = iat %v nbf %v exp %v", claims["iat"], claims["nbf"], claims["exp"])
	}
	if aud, _ := json.Marshal(claims["aud"]); string(aud) != `["a","b"]` {
		t.Errorf("aud = %s, want a list of both", aud)
	}
	if claims["iss"] != "https://elsewhere.example" {
		t.Errorf("iss = %v", claims["iss"])
	}
}

func TestForgedTokensDoNotVerify(t *testing.T) {
	iss := NewIssuer(t)
	if verifies(t, iss, iss.Token(t, nil, WithSigningKey(NewKey(t)))) {
		t.Error("a token signed by an unpublished key verifies")
	}
	none := iss.Token(t, nil, WithAlgNone())
	if !strings.HasSuffix(none, ".") || strings.Count(none, ".") != 2 {
		t.Errorf("alg none token %q should end in an empty signature", none)
	}
}

func TestRotationKeepsOldKeysUntilRemoved(t *testing.T) {
	iss := NewIssuer(t)
	oldKid := iss.KeyID()
	old := iss.Token(t, nil)
	newKid := iss.RotateKey()
	if newKid == oldKid || iss.KeyID() != newKid {
		t.Fatalf("RotateKey gave kid %q; old %q, current %q", newKid, oldKid, iss.KeyID())
	}
	if !verifies(t, iss, old) || !verifies(t, iss, iss.Token(t, nil)) {
		t.Fatal("after rotation both old and new tokens should verify")
	}
	iss.RemoveKey(oldKid)
	if verifies(t, iss, old) {
		t.Error("a token of a removed key still verifies")
	}
}

func TestDownIssuerAnswers503AndCountsRequests(t *testing.T) {
	iss := NewIssuer(t)
	iss.SetKeysDown(true)
	if code := getJSON(t, iss.URL()+"/.well-known/openid-configuration", nil); code != http.StatusOK {
		t.Errorf("discovery with keys down = %d, want 200", code)
	}
	if code := getJSON(t, iss.URL()+JWKSPath, nil); code != http.StatusServiceUnavailable {
		t.Errorf("jwks with keys down = %d, want 503", code)
	}
	iss.SetKeysDown(false)
	iss.SetDown(true)
	if code := getJSON(t, iss.URL()+"/.well-known/openid-configuration", nil); code != http.StatusServiceUnavailable {
		t.Errorf("discovery while down = %d, want 503", code)
	}
	if got := iss.Requests(); got != 3 {
		t.Errorf("Requests() = %d, want 3", got)
	}
}
