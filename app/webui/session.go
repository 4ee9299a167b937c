package webui

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Cookie names and lifetimes.
const (
	sessionCookie = "ripcord_session"
	stateCookie   = "ripcord_oauth_state"
	// sessionLifetime matches GitHub's expiring user tokens (8 hours), so a
	// session does not outlive the token inside it.
	sessionLifetime = 8 * time.Hour
	// stateLifetime bounds the round trip through GitHub's sign-in page.
	stateLifetime = 10 * time.Minute
)

// session is what the session cookie carries, sealed: who signed in and
// their user token, which the pages use to ask GitHub what they can read.
type session struct {
	Login   string    `json:"login"`
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
}

// oauthState is the state cookie: the random state sent to GitHub and the
// page to return to.
type oauthState struct {
	State   string    `json:"state"`
	Next    string    `json:"next"`
	Expires time.Time `json:"expires"`
}

// sealer seals cookie values with AES-256-GCM: the user token inside must
// be secret, not only unforgeable. The key is derived from the App's OAuth
// client secret (see newSealer), and each cookie name is bound in as
// additional data so a state cookie cannot be replayed as a session.
type sealer struct{ aead cipher.AEAD }

// newSealer derives the cookie key from the OAuth client secret with HKDF.
// Every replica derives the same key without a new setting, sessions
// survive restarts, and rotating the client secret on GitHub signs
// everyone out.
func newSealer(clientSecret string) (sealer, error) {
	if clientSecret == "" {
		return sealer{}, errors.New("the App's OAuth client secret is not known")
	}
	key, err := hkdf.Key(sha256.New, []byte(clientSecret), nil, "ripcord webui cookies v1", 32)
	if err != nil {
		return sealer{}, fmt.Errorf("derive the cookie key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return sealer{}, fmt.Errorf("cookie cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealer{}, fmt.Errorf("cookie cipher: %w", err)
	}
	return sealer{aead: aead}, nil
}

func (s sealer) seal(name string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("seal %s: %w", name, err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal %s: %w", name, err)
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(name))), nil
}

// open reverses seal; a value sealed under another key or cookie name, or
// changed in any way, is an error.
func (s sealer) open(name, value string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return fmt.Errorf("cookie %s: not a sealed value", name)
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(name))
	if err != nil {
		return fmt.Errorf("cookie %s: not sealed by this server", name)
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return fmt.Errorf("cookie %s: %w", name, err)
	}
	return nil
}

// openSession returns the session in value if it is sealed by this server
// and not expired at now.
func (s sealer) openSession(value string, now time.Time) (session, bool) {
	var ss session
	if err := s.open(sessionCookie, value, &ss); err != nil || ss.Login == "" || !now.Before(ss.Expires) {
		return session{}, false
	}
	return ss, true
}
