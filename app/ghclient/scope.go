package ghclient

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// Scope names the identity a request is made as: "installation:<id>",
// "app", "auth:<hash of the Authorization header>", or "" when it cannot be
// told. Pacing, rate-limit state and the cache are kept per scope, because
// GitHub counts limits per installation and a cached body must never be
// served to another identity.
//
// go-githubapp puts its client middlewares outside the transport that adds
// the installation token, and keeps the installation ID under a context key
// it does not export. What it does expose on every request is the
// User-Agent it builds, "<agent> (installation: <id>)" or
// "<agent> (application)"; Scope reads that first, then falls back to the
// Authorization header for clients built another way.
func Scope(req *http.Request) string {
	ua := req.Header.Get("User-Agent")
	if i := strings.LastIndex(ua, "(installation: "); i >= 0 && strings.HasSuffix(ua, ")") {
		id := ua[i+len("(installation: ") : len(ua)-1]
		if id != "" && strings.Trim(id, "0123456789") == "" {
			return "installation:" + id
		}
	}
	if strings.HasSuffix(ua, "(application)") {
		return "app"
	}
	if auth := req.Header.Get("Authorization"); auth != "" {
		sum := sha256.Sum256([]byte(auth))
		return "auth:" + hex.EncodeToString(sum[:8])
	}
	return ""
}
