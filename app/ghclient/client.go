package ghclient

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultAPIURL is github.com's REST API.
const DefaultAPIURL = "https://api.github.com/"

// Config is what New needs. The first fields are the settings users see
// (github.app_id, github.private_key, github.api_url); the rest is wiring,
// and a zero value takes the defaults.
type Config struct {
	AppID      int64
	PrivateKey []byte // PEM, PKCS#1 or PKCS#8 RSA
	APIURL     string // REST API root; GitHub Enterprise Server: https://HOST/api/v3/
	// Version goes into the User-Agent, ripcord/<version>.
	Version string

	Registerer prometheus.Registerer
	Counter    *Counter
	// Transport carries the requests; nil is http.DefaultTransport.
	Transport http.RoundTripper
	// Clock is used by every middleware whose own policy names none.
	Clock     Clock
	Retry     RetryPolicy
	RateLimit RateLimitPolicy
	Pace      PacePolicy
	Cache     CacheConfig
}

// Middlewares is the stack New installs, outermost first: RateLimit,
// Retry, Pace, Cache, Metrics (doc.go says why in this order).
func Middlewares(cfg Config) ([]githubapp.ClientMiddleware, error) {
	clock := clockOr(cfg.Clock)
	if cfg.Retry.Clock == nil {
		cfg.Retry.Clock = clock
	}
	if cfg.RateLimit.Clock == nil {
		cfg.RateLimit.Clock = clock
	}
	if cfg.Pace.Clock == nil {
		cfg.Pace.Clock = clock
	}
	metrics, err := Metrics(MetricsConfig{Registerer: cfg.Registerer, Counter: cfg.Counter, Clock: clock})
	if err != nil {
		return nil, err
	}
	return []githubapp.ClientMiddleware{
		RateLimit(cfg.RateLimit),
		Retry(cfg.Retry),
		Pace(cfg.Pace),
		Cache(cfg.Cache),
		metrics,
	}, nil
}

// New returns the ClientCreator ripcord acts through: go-githubapp's, with
// installation clients cached per installation, the User-Agent
// ripcord/<version>, and the Middlewares in front of every call. The
// middlewares' state (pacing, rate-limit resets, the ETag cache) is shared
// by all clients it creates. GraphQL (v4) clients get the same stack, but
// Cache and Pace see only POSTs there: Cache passes them through, Pace
// counts them as writes.
func New(cfg Config) (githubapp.ClientCreator, error) {
	if cfg.AppID == 0 {
		return nil, fmt.Errorf("github.app_id is not set: %w", ErrNotConfigured)
	}
	if len(cfg.PrivateKey) == 0 {
		return nil, fmt.Errorf("github.private_key is not set: %w", ErrNotConfigured)
	}
	if err := checkPrivateKey(cfg.PrivateKey); err != nil {
		return nil, err
	}
	v3, v4, err := apiURLs(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	mws, err := Middlewares(cfg)
	if err != nil {
		return nil, err
	}
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	opts := []githubapp.ClientOption{
		githubapp.WithClientUserAgent("ripcord/" + version),
		githubapp.WithClientMiddleware(mws...),
	}
	if cfg.Transport != nil {
		opts = append(opts, githubapp.WithTransport(cfg.Transport))
	}
	var gc githubapp.Config
	gc.V3APIURL, gc.V4APIURL = v3, v4
	gc.App.IntegrationID = cfg.AppID
	gc.App.PrivateKey = string(cfg.PrivateKey)
	cc, err := githubapp.NewDefaultCachingClientCreator(gc, opts...)
	if err != nil {
		return nil, fmt.Errorf("create github client creator: %w", err)
	}
	return cc, nil
}

// apiURLs returns the REST and GraphQL roots for github.api_url:
// https://api.github.com/graphql for github.com, https://HOST/api/graphql
// for GitHub Enterprise Server's https://HOST/api/v3/.
func apiURLs(apiURL string) (v3, v4 string, err error) {
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", "", fmt.Errorf("github.api_url %q: want an http(s) URL such as %s or https://HOST/api/v3/", apiURL, DefaultAPIURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/"
	v3 = u.String()
	if strings.HasSuffix(u.Path, "/api/v3/") {
		u.Path = strings.TrimSuffix(u.Path, "v3/") + "graphql"
	} else {
		u.Path += "graphql"
	}
	return v3, u.String(), nil
}

// checkPrivateKey fails early, at start, on a key go-githubapp would only
// reject at the first call.
func checkPrivateKey(pemBytes []byte) error {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return errors.New("github.private_key: not PEM; want the private key file GitHub generated for the App (-----BEGIN RSA PRIVATE KEY-----)")
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return nil
	}
	return fmt.Errorf("github.private_key: PEM block %q is not an RSA private key in PKCS#1 or PKCS#8", block.Type)
}
