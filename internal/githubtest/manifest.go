package githubtest

// The manifest flow's code, seen from GitHub: convertManifest (apps.go)
// answers a code once. SpendManifestCode lets a test start from a code that
// GitHub will no longer take.

// SpendManifestCode marks code as already converted, as GitHub sees a code
// that was used (a reloaded callback, another replica) or has expired: the
// conversion then answers 404.
func (s *Server) SpendManifestCode(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = true
}
