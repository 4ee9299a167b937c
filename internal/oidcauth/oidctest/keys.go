package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"sync"
	"testing"
)

// keys lends the RSA keys this process made. Making a 2048-bit key takes
// tens of milliseconds, many times that under the race detector, and the
// end-to-end tests start an issuer for every scene: a CPU profile of
// app/rollbackflow put key generation at 8 % of the package's CPU. A key is
// lent to one test at a time and comes back when that test ends, so no two
// keys in use at once are the same (a verifier must tell one issuer's key
// from another's, and from a stranger's), while a run makes only as many
// keys as it has tests running at once.
var keys struct {
	mu   sync.Mutex
	free []*rsa.PrivateKey
}

// lendKey is a key no other running test holds, until t ends.
func lendKey(t testing.TB) (*rsa.PrivateKey, error) {
	keys.mu.Lock()
	var key *rsa.PrivateKey
	if n := len(keys.free); n > 0 {
		key, keys.free = keys.free[n-1], keys.free[:n-1]
	}
	keys.mu.Unlock()
	if key == nil {
		var err error
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			return nil, fmt.Errorf("oidctest: generate RSA key: %w", err)
		}
	}
	t.Cleanup(func() {
		keys.mu.Lock()
		defer keys.mu.Unlock()
		keys.free = append(keys.free, key)
	})
	return key, nil
}
