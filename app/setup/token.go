package setup

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// tokenBytes is the set-up token's randomness: 256 bits, far more than a
// guess over the network can reach.
const tokenBytes = 32

// TokenParam is the query parameter /setup takes the set-up token in.
const TokenParam = "token"

// NewToken is a random set-up token, URL-safe as it is, for a server that
// starts with no App: until one is registered, /setup offers a registration
// only to who brings it, that is who can read the server's log. Without it
// whoever reached the server first could register an App of their own, and
// the server would trust its webhook secret and key.
func NewToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a set-up token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// PageURL is the set-up page's address with token, as the start-up log
// gives it.
func PageURL(publicURL, token string) string {
	return publicURL + PagePath + "?" + TokenParam + "=" + token
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// AddToken records token (its SHA-256 only) as one that opens /setup on
// every replica sharing the database, until an App is registered.
func (s *Store) AddToken(ctx context.Context, token string, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO app_setup_tokens (token_hash, created_at) VALUES ($1, $2)
			ON CONFLICT (token_hash) DO NOTHING`, tokenHash(token), store.Micros(now)); err != nil {
			return fmt.Errorf("store the set-up token: %w", err)
		}
		return nil
	})
}

// TokenAccepted reports whether token is one a server logged: own (this
// process's, which needs no database) or one recorded with AddToken by any
// replica. Every comparison takes the same time whatever the token, and
// all of them are made, so the answer's timing tells nothing about how
// close a guess was.
func (s *Store) TokenAccepted(ctx context.Context, token, own string) (bool, error) {
	if token == "" {
		return false, nil
	}
	given := []byte(tokenHash(token))
	if own != "" && subtle.ConstantTimeCompare(given, []byte(tokenHash(own))) == 1 {
		return true, nil
	}
	ok := false
	rows, err := s.db.Read.QueryContext(ctx, `SELECT token_hash FROM app_setup_tokens`)
	if err != nil {
		return false, fmt.Errorf("read the set-up tokens: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var stored string
		if err := rows.Scan(&stored); err != nil {
			return false, fmt.Errorf("read the set-up tokens: %w", err)
		}
		if subtle.ConstantTimeCompare(given, []byte(stored)) == 1 {
			ok = true
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("read the set-up tokens: %w", err)
	}
	return ok, nil
}
