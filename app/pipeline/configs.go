package pipeline

import (
	"sync"

	"github.com/ripcord/ripcord/repoconfig"
)

// RepoConfigs keeps each repository's .github/ripcord.yml as this process
// last read it from the default branch (configload's Loader puts every such
// read here), so a reader that must not call GitHub — a web page, per
// request — can still use the repository's settings. It is as fresh as the
// last read by any capability (a gate evaluation, a protection review, a
// rollback, a recovery); a repository read by none since the process
// started, or whose config is missing or does not load, has none. Safe for
// concurrent use; a nil *RepoConfigs holds nothing.
type RepoConfigs struct {
	mu sync.Mutex
	m  map[string]*repoconfig.Config
}

// NewRepoConfigs returns an empty RepoConfigs.
func NewRepoConfigs() *RepoConfigs { return &RepoConfigs{m: map[string]*repoconfig.Config{}} }

// Put keeps cfg as repository's config; a nil cfg forgets it.
func (c *RepoConfigs) Put(repository string, cfg *repoconfig.Config) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg == nil {
		delete(c.m, repository)
		return
	}
	c.m[repository] = cfg
}

// Get returns repository's config as last read, if any.
func (c *RepoConfigs) Get(repository string) (*repoconfig.Config, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, ok := c.m[repository]
	return cfg, ok
}
