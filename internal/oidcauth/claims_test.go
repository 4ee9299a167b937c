package oidcauth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

var testWant = expectation{Issuer: DefaultIssuer, Audience: "https://ripcord.example", Skew: ClockSkew}

func date(t time.Time) *numericDate {
	d := numericDate(t)
	return &d
}

func validClaims() tokenClaims {
	return tokenClaims{
		Issuer:     DefaultIssuer,
		Audience:   audience{"https://ripcord.example"},
		Expiry:     date(testNow.Add(5 * time.Minute)),
		NotBefore:  date(testNow),
		IssuedAt:   date(testNow),
		Repository: "acme/checkout",
	}
}

func TestCheckClaims(t *testing.T) {
	cases := []struct {
		name    string
		change  func(*tokenClaims)
		kind    error  // nil: accepted
		message string // whole message when set
	}{
		{name: "a current token for ripcord", change: func(*tokenClaims) {}},
		{name: "expired exactly one skew ago is still accepted", change: func(c *tokenClaims) { c.Expiry = date(testNow.Add(-ClockSkew)) }},
		{name: "expired one second past the skew", change: func(c *tokenClaims) { c.Expiry = date(testNow.Add(-ClockSkew - time.Second)) },
			kind: ErrExpired, message: "token expired at 2025-03-01T11:58:59Z, 1m1s ago (ripcord allows 1m0s of clock skew)"},
		{name: "nbf a little ahead because ripcord's clock is slow", change: func(c *tokenClaims) { c.NotBefore = date(testNow.Add(59 * time.Second)) }},
		{name: "nbf further ahead than the skew", change: func(c *tokenClaims) { c.NotBefore = date(testNow.Add(2 * time.Minute)) },
			kind: ErrNotYetValid, message: "token nbf is 2025-03-01T12:02:00Z, 2m0s from now (ripcord allows 1m0s of clock skew)"},
		{name: "issued in the future beyond the skew", change: func(c *tokenClaims) { c.IssuedAt = date(testNow.Add(90 * time.Second)) }, kind: ErrNotYetValid},
		{name: "no nbf and no iat are fine", change: func(c *tokenClaims) { c.NotBefore, c.IssuedAt = nil, nil }},
		{name: "no exp would never expire", change: func(c *tokenClaims) { c.Expiry = nil }, kind: ErrMalformed, message: "token has no exp claim"},
		{name: "issuer with a trailing slash", change: func(c *tokenClaims) { c.Issuer = DefaultIssuer + "/" }, kind: ErrWrongIssuer,
			message: `token issuer "https://token.actions.githubusercontent.com/" is not ripcord's issuer "https://token.actions.githubusercontent.com"`},
		{name: "GitHub's default audience, the owner URL", change: func(c *tokenClaims) { c.Audience = audience{"https://github.com/acme"} }, kind: ErrWrongAudience,
			message: `token audience [https://github.com/acme] does not include ripcord's audience "https://ripcord.example"`},
		{name: "ripcord among several audiences", change: func(c *tokenClaims) { c.Audience = audience{"sts.amazonaws.com", "https://ripcord.example"} }},
		{name: "no audience at all", change: func(c *tokenClaims) { c.Audience = nil }, kind: ErrWrongAudience},
		{name: "audience differing only in a trailing slash", change: func(c *tokenClaims) { c.Audience = audience{"https://ripcord.example/"} }, kind: ErrWrongAudience},
		{name: "wrong issuer and audience reports the issuer", change: func(c *tokenClaims) { c.Issuer, c.Audience = "https://accounts.google.com", nil }, kind: ErrWrongIssuer},
		{name: "expired token from elsewhere reports the issuer", change: func(c *tokenClaims) {
			c.Issuer, c.Expiry = "https://accounts.google.com", date(testNow.Add(-time.Hour))
		}, kind: ErrWrongIssuer},
		{name: "no repository claim is not an Actions token", change: func(c *tokenClaims) { c.Repository = "" }, kind: ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validClaims()
			tc.change(&c)
			err := checkClaims(c, testWant, testNow)
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %v, want %v", err, tc.kind)
			}
			if tc.message != "" && err.Error() != tc.message {
				t.Errorf("message:\n got %s\nwant %s", err, tc.message)
			}
		})
	}
}

func TestDecodeClaims(t *testing.T) {
	cases := []struct {
		name    string
		payload string
		check   func(t *testing.T, c tokenClaims)
		mention string // set when the payload must be refused; the message must contain it
	}{
		{name: "aud as one string, as GitHub sends it", payload: `{"aud":"https://ripcord.example"}`, check: func(t *testing.T, c tokenClaims) {
			if len(c.Audience) != 1 || c.Audience[0] != "https://ripcord.example" {
				t.Errorf("aud = %v", c.Audience)
			}
		}},
		{name: "aud as a list", payload: `{"aud":["a","b"]}`, check: func(t *testing.T, c tokenClaims) {
			if len(c.Audience) != 2 || c.Audience[1] != "b" {
				t.Errorf("aud = %v", c.Audience)
			}
		}},
		{name: "fractional exp keeps its milliseconds", payload: `{"exp":1700000000.5}`, check: func(t *testing.T, c tokenClaims) {
			if got := time.Time(*c.Expiry); !got.Equal(time.Unix(1700000000, 5e8)) {
				t.Errorf("exp = %v", got)
			}
		}},
		{name: "GitHub string claims", payload: `{"repository":"acme/checkout","run_id":"9876543210","environment":"production"}`, check: func(t *testing.T, c tokenClaims) {
			if c.Repository != "acme/checkout" || c.RunID != "9876543210" || c.Environment != "production" {
				t.Errorf("claims = %+v", c)
			}
		}},
		{name: "aud as a number", payload: `{"aud":42}`, mention: "aud must be a string or a list of strings"},
		{name: "exp as a string", payload: `{"exp":"1700000000"}`, mention: "exp, nbf and iat must be numbers"},
		{name: "exp before 1970", payload: `{"exp":-1}`, mention: "before year 10000"},
		{name: "exp past year 9999 would overflow", payload: `{"exp":1e300}`, mention: "before year 10000"},
		{name: "repository as an object", payload: `{"repository":{"name":"x"}}`, mention: "repository"},
		{name: "claims as a list", payload: `[]`, mention: "not a valid JWT claims object"},
		{name: "claims not JSON", payload: `repository=acme/checkout`, mention: "not a valid JWT claims object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := decodeClaims([]byte(tc.payload))
			if tc.mention == "" {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, c)
				return
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %v, want ErrMalformed mentioning %q", err, tc.mention)
			}
		})
	}
}
