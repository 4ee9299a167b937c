package webui

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
)

// csrfField is the form field that carries the token.
const csrfField = "csrf"

// csrfToken binds a form to the session that was shown it and to the one
// action it performs: an HMAC of both under a key derived from the OAuth
// client secret (another info string than the cookie key). Another site
// cannot read the page, so it cannot know the token; a token for one
// release's form does not work on another's, nor after signing in again.
func csrfToken(clientSecret string, ss session, action string) (string, error) {
	key, err := hkdf.Key(sha256.New, []byte(clientSecret), nil, "ripcord webui csrf v1", 32)
	if err != nil {
		return "", fmt.Errorf("derive the form key: %w", err)
	}
	tok := sha256.Sum256([]byte(ss.Token))
	m := hmac.New(sha256.New, key)
	for _, part := range []string{ss.Login, string(tok[:]), strconv.FormatInt(ss.Expires.UnixNano(), 10), action} {
		m.Write([]byte(strconv.Itoa(len(part)) + ":" + part)) // length-prefixed, so parts cannot run together
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// validCSRF reports whether got is the token of ss and action.
func validCSRF(clientSecret string, ss session, action, got string) bool {
	want, err := csrfToken(clientSecret, ss, action)
	return err == nil && got != "" && hmac.Equal([]byte(got), []byte(want))
}

// rollbackAction is what a rollback form's token is bound to.
func rollbackAction(releaseID string) string { return "POST /releases/" + releaseID + "/rollback" }

// logoutAction is what a sign-out form's token is bound to: without it,
// any page could sign a person out by posting to /logout.
const logoutAction = "POST /logout"
