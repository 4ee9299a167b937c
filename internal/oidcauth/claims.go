package oidcauth

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// Claims is what a verified GitHub Actions token says about the job that asked
// for it. Fields carry GitHub's claim of the same name (in comments); see
// GitHub's "About security hardening with OpenID Connect". GitHub sends the ids
// and counters as JSON strings, so they stay strings here.
type Claims struct {
	Subject         string    // sub, e.g. "repo:acme/checkout:ref:refs/heads/main"
	Repository      string    // repository, "owner/name"
	RepositoryID    string    // repository_id
	RepositoryOwner string    // repository_owner
	RunID           string    // run_id
	RunAttempt      string    // run_attempt
	Actor           string    // actor
	Ref             string    // ref, e.g. "refs/heads/main"
	SHA             string    // sha
	Workflow        string    // workflow (its name)
	WorkflowRef     string    // workflow_ref, "owner/name/.github/workflows/x.yml@ref"
	JobWorkflowRef  string    // job_workflow_ref; differs from workflow_ref in reusable workflows
	Environment     string    // environment; empty when the job has none
	EventName       string    // event_name
	Issuer          string    // iss
	Audience        []string  // aud
	ExpiresAt       time.Time // exp
}

// tokenClaims is the payload as GitHub writes it, before any check.
type tokenClaims struct {
	Issuer          string       `json:"iss"`
	Subject         string       `json:"sub"`
	Audience        audience     `json:"aud"`
	Expiry          *numericDate `json:"exp"`
	NotBefore       *numericDate `json:"nbf"`
	IssuedAt        *numericDate `json:"iat"`
	Repository      string       `json:"repository"`
	RepositoryID    string       `json:"repository_id"`
	RepositoryOwner string       `json:"repository_owner"`
	RunID           string       `json:"run_id"`
	RunAttempt      string       `json:"run_attempt"`
	Actor           string       `json:"actor"`
	Ref             string       `json:"ref"`
	SHA             string       `json:"sha"`
	Workflow        string       `json:"workflow"`
	WorkflowRef     string       `json:"workflow_ref"`
	JobWorkflowRef  string       `json:"job_workflow_ref"`
	Environment     string       `json:"environment"`
	EventName       string       `json:"event_name"`
}

// expectation is what ripcord requires of every token.
type expectation struct {
	Issuer   string
	Audience string
	Skew     time.Duration
}

func decodeClaims(payload []byte) (tokenClaims, error) {
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return tokenClaims{}, failWith(ErrMalformed, "token claims are not a valid JWT claims object", err)
	}
	return c, nil
}

// checkClaims decides whether a token's claims are acceptable at now. The
// issuer is checked first because a token from elsewhere is usually wrong in
// every other way too, and the issuer is the mistake to report.
func checkClaims(c tokenClaims, want expectation, now time.Time) error {
	if c.Issuer != want.Issuer {
		return fail(ErrWrongIssuer, fmt.Sprintf("token issuer %q is not ripcord's issuer %q", c.Issuer, want.Issuer))
	}
	if !slices.Contains(c.Audience, want.Audience) {
		return fail(ErrWrongAudience, fmt.Sprintf("token audience %v does not include ripcord's audience %q", []string(c.Audience), want.Audience))
	}
	if c.Expiry == nil {
		return fail(ErrMalformed, "token has no exp claim")
	}
	if exp := time.Time(*c.Expiry); now.After(exp.Add(want.Skew)) {
		return fail(ErrExpired, fmt.Sprintf("token expired at %s, %s ago (ripcord allows %s of clock skew)",
			exp.UTC().Format(time.RFC3339), now.Sub(exp).Round(time.Second), want.Skew))
	}
	if err := notBefore("nbf", c.NotBefore, now, want.Skew); err != nil {
		return err
	}
	if err := notBefore("iat", c.IssuedAt, now, want.Skew); err != nil {
		return err
	}
	if c.Repository == "" {
		return fail(ErrMalformed, "token has no repository claim; only GitHub Actions OIDC tokens are accepted")
	}
	return nil
}

// notBefore refuses a token whose nbf or iat lies further in the future than
// the clocks of GitHub and ripcord can plausibly disagree.
func notBefore(claim string, at *numericDate, now time.Time, skew time.Duration) error {
	if at == nil {
		return nil
	}
	t := time.Time(*at)
	if now.Add(skew).Before(t) {
		return fail(ErrNotYetValid, fmt.Sprintf("token %s is %s, %s from now (ripcord allows %s of clock skew)",
			claim, t.UTC().Format(time.RFC3339), t.Sub(now).Round(time.Second), skew))
	}
	return nil
}

func (c tokenClaims) public() *Claims {
	out := &Claims{
		Subject:         c.Subject,
		Repository:      c.Repository,
		RepositoryID:    c.RepositoryID,
		RepositoryOwner: c.RepositoryOwner,
		RunID:           c.RunID,
		RunAttempt:      c.RunAttempt,
		Actor:           c.Actor,
		Ref:             c.Ref,
		SHA:             c.SHA,
		Workflow:        c.Workflow,
		WorkflowRef:     c.WorkflowRef,
		JobWorkflowRef:  c.JobWorkflowRef,
		Environment:     c.Environment,
		EventName:       c.EventName,
		Issuer:          c.Issuer,
		Audience:        slices.Clone([]string(c.Audience)),
	}
	if c.Expiry != nil {
		out.ExpiresAt = time.Time(*c.Expiry)
	}
	return out
}

// audience is the aud claim, which JWT allows as one string or a list.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("aud must be a string or a list of strings, got %s", b)
	}
	*a = many
	return nil
}

// latestNumericDate is 9999-12-31T23:59:59Z; larger values are nonsense and
// would overflow the conversion to time.Time.
const latestNumericDate = 253402300799

// numericDate is a JWT NumericDate: seconds since the epoch, maybe fractional.
type numericDate time.Time

func (d *numericDate) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("exp, nbf and iat must be numbers of seconds, got %s", b)
	}
	if f < 0 || f > latestNumericDate {
		return fmt.Errorf("exp, nbf and iat must be seconds since 1970 before year 10000, got %s", b)
	}
	sec, frac := math.Modf(f)
	*d = numericDate(time.Unix(int64(sec), int64(frac*1e9)))
	return nil
}
