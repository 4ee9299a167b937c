package oidcauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// maxKeySetBytes bounds what ripcord reads from the JWKS endpoint; GitHub's
// key set is a few kilobytes.
const maxKeySetBytes = 1 << 20

// keySet holds the keys the issuer publishes at its jwks_uri and refetches
// them when a signature fails against the cached ones, as OIDC prescribes for
// key rotation. Unlike go-oidc's RemoteKeySet it refetches at most once per
// keysRefetchAfter, so forged tokens cannot make ripcord hammer GitHub, it
// tells a failed fetch from a bad signature by type, and a caller never gets
// the result of a fetch that ended before it asked.
type keySet struct {
	url    string
	client *http.Client
	now    func() time.Time

	// turn lets one caller look at or refresh the keys at a time; it is a
	// channel rather than a mutex so waiting callers can give up.
	turn      chan struct{}
	keys      []jose.JSONWebKey // guarded by turn
	fetchedAt time.Time         // guarded by turn; last attempt, good or bad
	fetchErr  error             // guarded by turn; nil after a good fetch
}

func newKeySet(url string, client *http.Client, now func() time.Time) *keySet {
	return &keySet{url: url, client: client, now: now, turn: make(chan struct{}, 1)}
}

// verify checks the signature of jws against the issuer's keys and returns
// the signed payload.
func (s *keySet) verify(ctx context.Context, jws *jose.JSONWebSignature) ([]byte, error) {
	kid := jws.Signatures[0].Header.KeyID
	keys, err := s.current(ctx, false)
	if err != nil {
		return nil, err
	}
	if payload, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	keys, err = s.current(ctx, true)
	if err != nil {
		return nil, err
	}
	if payload, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	return nil, fail(ErrBadSignature, fmt.Sprintf("token signature (kid %q) does not verify with any key the issuer publishes", kid))
}

// current returns the cached keys. It fetches them when there are none yet,
// or when refresh asks for fresh ones because a signature failed, but not
// again within keysRefetchAfter of the last attempt.
func (s *keySet) current(ctx context.Context, refresh bool) ([]jose.JSONWebKey, error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, failWith(ErrIssuerUnavailable, "waiting for the issuer's signing keys", ctx.Err())
	}
	defer func() { <-s.turn }()

	now := s.now()
	switch {
	case len(s.keys) > 0 && !refresh:
		return s.keys, nil
	case !s.fetchedAt.IsZero() && now.Sub(s.fetchedAt) < keysRefetchAfter:
		if s.fetchErr != nil {
			// Without the fresh keys ripcord cannot tell a forged token
			// from one signed with a new key: that is ripcord's problem.
			msg := fmt.Sprintf("the issuer's signing keys could not be fetched %s ago; next try after %s",
				now.Sub(s.fetchedAt).Round(time.Second), keysRefetchAfter)
			return nil, failWith(ErrIssuerUnavailable, msg, s.fetchErr)
		}
		return s.keys, nil
	}
	keys, err := s.fetch(ctx)
	if err != nil {
		// A caller that hung up says nothing about the issuer: no pause for it.
		if ctx.Err() == nil {
			s.fetchedAt, s.fetchErr = now, err
		}
		return nil, failWith(ErrIssuerUnavailable, "fetch the issuer's signing keys", err)
	}
	s.keys, s.fetchedAt, s.fetchErr = keys, now, nil
	return keys, nil
}

func (s *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks_uri %q: %w", s.url, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeySetBytes))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %s", s.url, resp.Status)
	}
	return parseKeySet(s.url, body)
}

// parseKeySet keeps the keys go-jose understands and skips the rest, as RFC
// 7517 section 5 asks, so one exotic key does not lock every token out.
func parseKeySet(url string, body []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("%s is not a JSON Web Key Set: %w", url, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) == nil && key.IsPublic() && key.Valid() {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s has no usable public keys", url)
	}
	return keys, nil
}

// verifyWith tries the keys named by kid, or every key when the token names
// none.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) ([]byte, bool) {
	for _, key := range keys {
		if kid != "" && key.KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(key); err == nil {
			return payload, true
		}
	}
	return nil, false
}
