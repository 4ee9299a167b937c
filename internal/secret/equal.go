// Package secret compares bearer secrets (the api_token, the clusters'
// tokens) with what a request sent.
package secret

import (
	"crypto/sha256"
	"crypto/subtle"
)

// Equal reports whether got is want, in a time that tells nothing of
// want. subtle.ConstantTimeCompare returns at once when the lengths
// differ, so its timing tells a caller who varies got's length how long
// want is; comparing the SHA-256 sums instead compares 32 bytes with 32
// bytes whatever the lengths. Hashing got takes a time that depends on
// got's length only, which its sender knows already.
func Equal(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}
