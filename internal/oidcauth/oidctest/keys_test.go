package oidctest

import (
	"crypto/rsa"
	"testing"
)

// Keys in use at once are all different; a test's keys serve a later test.
// (Not parallel: no other test may take the keys between the subtests.)
func TestKeysAreLentOneTestAtATime(t *testing.T) {
	var first []*rsa.PrivateKey
	t.Run("first", func(t *testing.T) {
		a, b := NewIssuer(t), NewIssuer(t)
		b.RotateKey()
		held := append(issuerKeys(a), issuerKeys(b)...)
		held = append(held, NewKey(t))
		for i := range held {
			for j := range i {
				if held[i].Equal(held[j]) {
					t.Errorf("keys %d and %d in use at once are the same", j, i)
				}
			}
		}
		first = held
	})
	t.Run("second", func(t *testing.T) {
		key := issuerKeys(NewIssuer(t))[0]
		for _, k := range first {
			if key.Equal(k) {
				return
			}
		}
		t.Error("an issuer made a new key while the keys of a finished test were free")
	})
}

func issuerKeys(i *Issuer) []*rsa.PrivateKey {
	i.mu.Lock()
	defer i.mu.Unlock()
	var out []*rsa.PrivateKey
	for _, k := range i.keys {
		out = append(out, k.key)
	}
	return out
}
