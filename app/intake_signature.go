package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"strings"
)

var errBadSignature = errors.New("missing or wrong X-Hub-Signature-256 for the configured webhook secrets")

// parseSignature reads the X-Hub-Signature-256 header: "sha256=" and the
// hex of a SHA-256 HMAC. A malformed header is refused before the body is
// read.
func parseSignature(header string) ([]byte, bool) {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return nil, false
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil || len(sig) != sha256.Size {
		return nil, false
	}
	return sig, true
}

// signedBody is a request body that computes the HMAC of every configured
// secret as it is read, so the dispatcher's one read of the payload is also
// the signature check's. verify reads what is left and compares.
type signedBody struct {
	r    io.ReadCloser
	want []byte
	macs []hash.Hash
	err  error // a read error, kept for verify
	// arrived tells the group commit that the delivery is no longer on
	// its way (groupWriter.expect); calling it again does nothing.
	arrived func()
}

type signedBodyKey struct{}

func newSignedBody(r io.ReadCloser, secrets []string, want []byte) *signedBody {
	b := &signedBody{r: r, want: want, macs: make([]hash.Hash, len(secrets))}
	for i, s := range secrets {
		b.macs[i] = hmac.New(sha256.New, []byte(s))
	}
	return b
}

func (b *signedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	for _, m := range b.macs {
		m.Write(p[:n])
	}
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

func (b *signedBody) Close() error { return b.r.Close() }

// verify reads the rest of the body and reports whether one of the secrets
// signed it. Every secret is compared, so the time taken does not tell
// which one matched.
func (b *signedBody) verify() error {
	if _, err := io.Copy(io.Discard, b); err != nil {
		return err
	}
	if b.err != nil {
		return b.err
	}
	match := false
	for _, m := range b.macs {
		if hmac.Equal(b.want, m.Sum(nil)) {
			match = true
		}
	}
	if !match {
		return errBadSignature
	}
	return nil
}

// verifyContext checks the signature of the request whose context ctx is.
// A context without a signed body was not built by intake.ServeHTTP, which
// must never happen; it is refused rather than trusted.
func verifyContext(ctx context.Context) error {
	b, ok := ctx.Value(signedBodyKey{}).(*signedBody)
	if !ok {
		return errBadSignature
	}
	return b.verify()
}

func verifyRequest(r *http.Request) error { return verifyContext(r.Context()) }
