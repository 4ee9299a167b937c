package oidcauth_test

import (
	"context"
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/oidcauth"
	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
)

func TestVerifyReturnsGitHubClaims(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	v := newVerifier(t, iss, newClock())
	exp := time.Now().Add(3 * time.Minute).Truncate(time.Second)
	const reusable = "acme/workflows/.github/workflows/deploy.yml@refs/tags/v1"
	token := iss.Token(t, map[string]any{
		"environment":      "production",
		"job_workflow_ref": reusable,
		"sub":              "repo:acme/checkout:environment:production",
	}, oidctest.WithExpiry(exp))

	got := mustVerify(t, v, token)
	want := &oidcauth.Claims{
		Subject:         "repo:acme/checkout:environment:production",
		Repository:      oidctest.Repository,
		RepositoryID:    "123456789",
		RepositoryOwner: "acme",
		RunID:           oidctest.RunID,
		RunAttempt:      "1",
		Actor:           "octocat",
		Ref:             "refs/heads/main",
		SHA:             oidctest.SHA,
		Workflow:        "deploy",
		WorkflowRef:     "acme/checkout/.github/workflows/deploy.yml@refs/heads/main",
		JobWorkflowRef:  reusable,
		Environment:     "production",
		EventName:       "push",
		Issuer:          iss.URL(),
		Audience:        []string{oidctest.Audience},
		ExpiresAt:       exp,
	}
	if !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("ExpiresAt = %v, want %v", got.ExpiresAt, want.ExpiresAt)
	}
	got.ExpiresAt = want.ExpiresAt
	if !reflect.DeepEqual(got, want) {
		t.Errorf("claims:\n got %+v\nwant %+v", got, want)
	}
}

func TestVerifyRefusesBadTokens(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	other := oidctest.NewIssuer(t)
	stranger := oidctest.NewKey(t)
	now := time.Now()
	cases := []struct {
		name    string
		token   func(t *testing.T) string
		kind    error
		offline bool // refused on its claims alone, before asking the issuer anything
	}{
		{name: "audience meant for another service", kind: oidcauth.ErrWrongAudience, offline: true,
			token: func(t *testing.T) string { return iss.Token(t, nil, oidctest.WithAudience("https://github.com/acme")) }},
		{name: "token from another issuer", kind: oidcauth.ErrWrongIssuer, offline: true,
			token: func(t *testing.T) string { return other.Token(t, nil) }},
		{name: "iss claim naming github.com's issuer", kind: oidcauth.ErrWrongIssuer, offline: true,
			token: func(t *testing.T) string { return iss.Token(t, nil, oidctest.WithIssuer(oidcauth.DefaultIssuer)) }},
		{name: "expired two minutes ago", kind: oidcauth.ErrExpired, offline: true,
			token: func(t *testing.T) string {
				return iss.Token(t, nil, oidctest.WithIssuedAt(now.Add(-7*time.Minute)))
			}},
		{name: "not valid for another two minutes", kind: oidcauth.ErrNotYetValid, offline: true,
			token: func(t *testing.T) string { return iss.Token(t, nil, oidctest.WithNotBefore(now.Add(2*time.Minute))) }},
		{name: "signed by a stranger under the issuer's kid", kind: oidcauth.ErrBadSignature,
			token: func(t *testing.T) string { return iss.Token(t, nil, oidctest.WithSigningKey(stranger)) }},
		{name: "signed by a stranger under a kid the issuer never had", kind: oidcauth.ErrBadSignature,
			token: func(t *testing.T) string {
				return iss.Token(t, nil, oidctest.WithSigningKey(stranger), oidctest.WithKeyID("forged"))
			}},
		{name: "signed by another issuer's key but claiming this issuer", kind: oidcauth.ErrBadSignature,
			token: func(t *testing.T) string { return other.Token(t, nil, oidctest.WithIssuer(iss.URL())) }},
		{name: "payload swapped after signing", kind: oidcauth.ErrBadSignature,
			token: func(t *testing.T) string {
				signed := strings.Split(iss.Token(t, nil), ".")
				evil := strings.Split(iss.Token(t, map[string]any{"repository": "evil/repo"}), ".")
				return signed[0] + "." + evil[1] + "." + signed[2]
			}},
		{name: "alg none with no signature", kind: oidcauth.ErrBadSignature, offline: true,
			token: func(t *testing.T) string { return iss.Token(t, nil, oidctest.WithAlgNone()) }},
		{name: "token without exp", kind: oidcauth.ErrMalformed, offline: true,
			token: func(t *testing.T) string { return iss.Token(t, map[string]any{"exp": nil}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := newVerifier(t, iss, newClock())
			before := iss.Requests()
			claims, err := v.Verify(context.Background(), tc.token(t))
			if claims != nil {
				t.Errorf("refused token still returned claims %+v", claims)
			}
			wantKind(t, err, tc.kind)
			if tc.offline && iss.Requests() != before {
				t.Errorf("asked the issuer %d times for a token its claims already refuse", iss.Requests()-before)
			}
		})
	}
}

func TestVerifyAllowsAMinuteOfClockSkew(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	now := time.Now()
	cases := []struct {
		name string
		opt  oidctest.Option
	}{
		{name: "expired thirty seconds ago", opt: oidctest.WithExpiry(now.Add(-30 * time.Second))},
		{name: "valid from thirty seconds from now", opt: oidctest.WithNotBefore(now.Add(30 * time.Second))},
		{name: "issued thirty seconds from now", opt: oidctest.WithIssuedAt(now.Add(30 * time.Second))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustVerify(t, newVerifier(t, iss, &clock{now: now}), iss.Token(t, nil, tc.opt))
		})
	}
}

func TestVerifyRefusesMalformedStrings(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	v := newVerifier(t, iss, newClock())
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"RS256","typ":"JWT","kid":"oidctest-key-1"}`))
	cases := map[string]string{
		"empty":                           "",
		"one part":                        "eyJhbGciOiJSUzI1NiJ9",
		"two parts":                       header + "." + b64([]byte(`{"repository":"acme/checkout"}`)),
		"four parts":                      iss.Token(t, nil) + ".extra",
		"garbage":                         "not a token at all",
		"bearer prefix left on":           "Bearer " + iss.Token(t, nil),
		"header not base64":               "%%%." + b64([]byte(`{}`)) + ".c2ln",
		"header not JSON":                 b64([]byte("RS256")) + "." + b64([]byte(`{}`)) + ".c2ln",
		"claims not JSON":                 header + "." + b64([]byte("acme/checkout")) + ".c2ln",
		"JSON serialization, not compact": `{"payload":"e30","signatures":[]}`,
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), raw)
			wantKind(t, err, oidcauth.ErrMalformed)
		})
	}
	if n := iss.Requests(); n != 0 {
		t.Errorf("malformed tokens made %d requests to the issuer, want none", n)
	}
}

func TestNewMakesNoRequest(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	newVerifier(t, iss, newClock())
	if n := iss.Requests(); n != 0 {
		t.Errorf("New made %d requests to the issuer; the server must start offline", n)
	}
	if _, err := oidcauth.New(oidcauth.Config{Issuer: "https://unreachable.invalid", Audience: oidctest.Audience}); err != nil {
		t.Errorf("New with an unreachable issuer: %v", err)
	}
}

func TestNewDefaultsToGitHubsIssuer(t *testing.T) {
	iss := oidctest.NewIssuer(t)
	v, err := oidcauth.New(oidcauth.Config{Audience: oidctest.Audience})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), iss.Token(t, nil))
	wantKind(t, err, oidcauth.ErrWrongIssuer)
	if !strings.Contains(err.Error(), `"https://token.actions.githubusercontent.com"`) {
		t.Errorf("message %q should name GitHub's issuer", err)
	}
}

func TestNewRefusesConfig(t *testing.T) {
	cases := []struct {
		name    string
		cfg     oidcauth.Config
		mention string
	}{
		{name: "no audience", cfg: oidcauth.Config{}, mention: "audience is required"},
		{name: "issuer without scheme", cfg: oidcauth.Config{Issuer: "token.actions.githubusercontent.com", Audience: "a"}, mention: `"token.actions.githubusercontent.com" is not an http(s) URL`},
		{name: "issuer with another scheme", cfg: oidcauth.Config{Issuer: "ftp://issuer.example", Audience: "a"}, mention: "not an http(s) URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := oidcauth.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.mention)
			}
		})
	}
}
