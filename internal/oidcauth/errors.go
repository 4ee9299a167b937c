package oidcauth

import "errors"

// Kinds of verification failure. Every error Verify returns matches exactly one
// of them with errors.Is; its message says what was wrong in words a workflow
// author can act on. ErrIssuerUnavailable is ripcord's problem (answer 503);
// all others mean the token is unacceptable (answer 401).
var (
	ErrMalformed         = errors.New("malformed token")
	ErrWrongIssuer       = errors.New("wrong token issuer")
	ErrWrongAudience     = errors.New("wrong token audience")
	ErrExpired           = errors.New("token expired")
	ErrNotYetValid       = errors.New("token not yet valid")
	ErrBadSignature      = errors.New("bad token signature")
	ErrIssuerUnavailable = errors.New("token issuer unavailable")
)

// verifyError carries a user-facing message while matching its kind and,
// when there is one, the underlying cause.
type verifyError struct {
	kind  error
	msg   string
	cause error
}

func (e *verifyError) Error() string {
	if e.cause != nil {
		return e.msg + ": " + e.cause.Error()
	}
	return e.msg
}

func (e *verifyError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

func fail(kind error, msg string) error {
	return &verifyError{kind: kind, msg: msg}
}

func failWith(kind error, msg string, cause error) error {
	return &verifyError{kind: kind, msg: msg, cause: cause}
}
