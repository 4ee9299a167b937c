package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// Tokens are the bearer tokens one cluster's sources (its agent) may
// present: those written in the configuration and those of its token
// files, one token per line. Several at once make a rotation possible
// without downtime: add the new token, move the agent to it, remove the
// old one. A token file is looked at on every use and read again when it
// changed, so none of these steps needs a restart of the server.
type Tokens struct {
	static []string
	files  []*tokenFile
}

// StaticTokens are tokens fixed for the life of the server.
func StaticTokens(tokens ...string) *Tokens { return &Tokens{static: slices.Clone(tokens)} }

// TokensOf is the clusters setting with one fixed token per cluster, for
// programs and tests that build a Config.
func TokensOf(clusters map[string]string) map[string]*Tokens {
	out := make(map[string]*Tokens, len(clusters))
	for name, tok := range clusters {
		out[name] = StaticTokens(tok)
	}
	return out
}

// List returns the tokens accepted now. A token file that changed but
// cannot be read again, or holds no token any more (caught half-written),
// keeps the tokens it held: err says so, once per failure, and no agent
// is locked out by a file being replaced.
func (t *Tokens) List() ([]string, error) {
	out := slices.Clone(t.static)
	var errs []error
	for _, f := range t.files {
		toks, err := f.tokens()
		out = append(out, toks...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// tokenFile is a file of tokens, one per line, and what it held when last
// read.
type tokenFile struct {
	path string

	mu      sync.Mutex
	info    os.FileInfo
	held    []string
	failing bool
}

// openTokenFile reads a token file for the first time: there, an
// unreadable or empty file is a configuration error.
func openTokenFile(path string) (*tokenFile, error) {
	f := &tokenFile{path: path}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	held, err := readTokens(path)
	if err != nil {
		return nil, err
	}
	f.info, f.held = info, held
	return f, nil
}

func (f *tokenFile) tokens() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := os.Stat(f.path)
	if err == nil && sameFile(f.info, info) {
		return f.held, nil
	}
	var held []string
	if err == nil {
		held, err = readTokens(f.path)
	}
	if err != nil {
		report := !f.failing
		f.failing = true
		if report {
			return f.held, fmt.Errorf("token file %s: %w; the %d token(s) it held before still hold", f.path, err, len(f.held))
		}
		return f.held, nil
	}
	f.info, f.held, f.failing = info, held, false
	return held, nil
}

// sameFile: the file was not replaced or written since a was taken.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// readTokens reads one token per line; blank lines are left out.
func readTokens(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var toks []string
	for _, line := range strings.Split(string(b), "\n") {
		if tok := strings.TrimSpace(line); tok != "" {
			toks = append(toks, tok)
		}
	}
	if len(toks) == 0 {
		return nil, errors.New("holds no token")
	}
	return toks, nil
}
