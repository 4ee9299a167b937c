package webui

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"time"
)

// accessTTL is how long the repositories a person can read are trusted
// before GitHub is asked again: short, so losing access on GitHub hides the
// releases within minutes, and long enough that browsing costs few calls.
const accessTTL = 2 * time.Minute

// access caches, per user token, the repositories its user can read.
type access struct {
	mu      sync.Mutex
	entries map[[32]byte]accessEntry
}

type accessEntry struct {
	repos   map[string]bool // lower-cased "owner/name"
	fetched time.Time
}

func newAccess() *access { return &access{entries: map[[32]byte]accessEntry{}} }

// readable returns the repositories the token's user can read, from the
// cache when it is fresh at now.
func (a *access) readable(ctx context.Context, gh gitHub, token string, now time.Time) (map[string]bool, error) {
	key := sha256.Sum256([]byte(token))
	a.mu.Lock()
	e, ok := a.entries[key]
	a.mu.Unlock()
	if ok && now.Sub(e.fetched) < accessTTL && !now.Before(e.fetched) {
		return e.repos, nil
	}
	names, err := gh.ReadableRepos(ctx, token)
	if err != nil {
		return nil, err
	}
	repos := make(map[string]bool, len(names))
	for _, n := range names {
		repos[strings.ToLower(n)] = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, old := range a.entries { // drop stale entries so the map stays small
		if now.Sub(old.fetched) >= accessTTL {
			delete(a.entries, k)
		}
	}
	a.entries[key] = accessEntry{repos: repos, fetched: now}
	return repos, nil
}

// canRead reports whether repository is among repos. A record without a
// repository cannot be checked against GitHub, so nobody sees it here.
func canRead(repos map[string]bool, repository string) bool {
	return repository != "" && repos[strings.ToLower(repository)]
}
