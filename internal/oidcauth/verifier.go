package oidcauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// DefaultIssuer is the issuer of the tokens GitHub Actions gives to jobs on github.com.
const DefaultIssuer = "https://token.actions.githubusercontent.com"

// ClockSkew is how far ripcord's clock may disagree with GitHub's before a
// token counts as expired or not yet valid.
const ClockSkew = time.Minute

const (
	// discoveryRetryAfter spaces out discovery attempts while the issuer is down.
	discoveryRetryAfter = 5 * time.Second
	// keysRefetchAfter spaces out fetches of the issuer's key set.
	keysRefetchAfter = 10 * time.Second
	// fetchTimeout bounds one request to the issuer.
	fetchTimeout = 10 * time.Second
)

// GitHub signs Actions tokens with RS256 only; accepting more algorithms
// would only widen what a forger may try.
var signingAlgs = []jose.SignatureAlgorithm{jose.RS256}

// Config says which tokens a Verifier accepts.
type Config struct {
	// Issuer is the token issuer's URL; tokens' iss claim must equal it.
	// Empty means DefaultIssuer. Tests point it at an issuer on loopback.
	Issuer string
	// Audience must be among the token's aud values: the audience the
	// workflow asked for when it requested the token. Required.
	Audience string
	// HTTPClient fetches discovery and keys; nil means a client with a timeout.
	HTTPClient *http.Client
	// Now is the clock for expiry and retry pauses; nil means time.Now.
	Now func() time.Time
}

// Verifier checks GitHub Actions OIDC tokens. It is safe for concurrent use.
type Verifier struct {
	want expectation
	now  func() time.Time
	keys *lazyKeys
}

// New checks cfg and builds a Verifier. It makes no network request; the
// issuer is first contacted by Verify.
func New(cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" {
		cfg.Issuer = DefaultIssuer
	}
	if err := checkIssuerURL(cfg.Issuer); err != nil {
		return nil, err
	}
	if cfg.Audience == "" {
		return nil, errors.New("oidc audience is required: set it to the audience your workflows request for ripcord's tokens")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	return &Verifier{
		want: expectation{Issuer: cfg.Issuer, Audience: cfg.Audience, Skew: ClockSkew},
		now:  cfg.Now,
		keys: newLazyKeys(cfg.Issuer, client, cfg.Now),
	}, nil
}

func checkIssuerURL(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("oidc issuer %q is not an http(s) URL, e.g. %q", issuer, DefaultIssuer)
	}
	return nil
}

// Verify checks that rawToken is a current token from the configured issuer,
// meant for ripcord's audience and signed with one of the issuer's published
// keys, and returns its claims. The claims are checked before the signature,
// so a token that is plainly wrong gets the precise complaint and costs no
// request to the issuer; nothing from the token is trusted until both pass.
func (v *Verifier) Verify(ctx context.Context, rawToken string) (*Claims, error) {
	if rawToken == "" {
		return nil, fail(ErrMalformed, "token is empty")
	}
	jws, err := jose.ParseSignedCompact(rawToken, signingAlgs)
	if err != nil {
		return nil, parseError(err)
	}
	payload := jws.UnsafePayloadWithoutVerification()
	claims, err := decodeClaims(payload)
	if err != nil {
		return nil, err
	}
	if err := checkClaims(claims, v.want, v.now()); err != nil {
		return nil, err
	}

	keys, err := v.keys.get(ctx)
	if err != nil {
		return nil, err
	}
	// jws carries one payload: the claims checked above are the bytes the
	// signature covers.
	if _, err := keys.verify(ctx, jws); err != nil {
		return nil, err
	}
	return claims.public(), nil
}

func parseError(err error) error {
	var alg *jose.ErrUnexpectedSignatureAlgorithm
	if errors.As(err, &alg) {
		return fail(ErrBadSignature, fmt.Sprintf("token is signed with alg %q; ripcord accepts only %s", alg.Got, jose.RS256))
	}
	return failWith(ErrMalformed, "token is not a signed JWT (header.payload.signature in base64url)", err)
}
