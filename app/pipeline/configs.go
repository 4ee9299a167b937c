package pipeline

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/repoconfig"
)

// configsTimeout bounds one database call of RepoConfigs: Put and Get take
// no context (their callers are a load already done and a request's
// answer), and neither may wait for ever on a database that does not answer.
const configsTimeout = 5 * time.Second

// RepoConfigs keeps each repository's .github/ripcord.yml as ripcord last
// read it from the default branch (configload's Loader puts every such read
// here), so a reader that must not call GitHub — a web page, per request,
// GET /api/v1/eligibility, a release check — can still use the
// repository's settings. It is as fresh as the last read by any capability
// (a gate evaluation, a protection review, a rollback, a recovery) of any
// server on the database: with one (NewStoredRepoConfigs) the file is kept
// in the repo_configs table, so a restart keeps it and every replica
// answers from the same one; a repository read by none, or whose config
// went missing or does not load, has none, and one gone stays gone. Safe
// for concurrent use; a nil *RepoConfigs holds nothing.
type RepoConfigs struct {
	mu sync.Mutex
	m  map[string]keptConfig
	// db, when set, keeps the configs; m is then a cache of their parses
	// (by the file's sha), so a Get parses only a file it has not seen.
	db   *store.DB
	opts repoconfig.Options
	log  *slog.Logger
}

// keptConfig is one repository's config as this process knows it.
type keptConfig struct {
	// cfg is nil (with a database) when the stored file does not load
	// with this server's settings, and (without one) when the last read
	// found none to use.
	cfg *repoconfig.Config
	sha string // of cfg.Text(); "" for a Config built in code
	// readAt is when the read that put cfg began (zero for a copy of the
	// database's): without a database, a Put of a read that began
	// earlier does not replace it.
	readAt time.Time
}

// NewRepoConfigs returns an empty RepoConfigs that keeps configs in this
// process's memory only (for tests of the readers).
func NewRepoConfigs() *RepoConfigs { return &RepoConfigs{m: map[string]keptConfig{}} }

// NewStoredRepoConfigs returns a RepoConfigs that keeps configs in db,
// loading a stored file again with opts (the server's, as its Loader
// checks configs). A database error is logged: Get then answers what this
// process last knew, and a Put that could not write is tried again by the
// next read of the file.
func NewStoredRepoConfigs(db *store.DB, opts repoconfig.Options, log *slog.Logger) *RepoConfigs {
	if log == nil {
		log = slog.Default()
	}
	return &RepoConfigs{m: map[string]keptConfig{}, db: db, opts: opts, log: log}
}

// Put keeps cfg, read from the default branch by a read that began at
// readAt, as repository's config; a nil cfg forgets it (durably, with a
// database). A Config not made by repoconfig.Load has no file to store: it
// is kept in this process only, until the next Put.
//
// Reads race: a job that asked GitHub before the file changed may finish
// after one that asked later. The read that began last wins, whichever
// finishes last, so a stale answer never replaces a newer one (a file
// just added is not forgotten by a read that found none a moment before).
//
// Every default-branch read puts, and the file rarely changes: with a
// database, Put reads the stored file's sha and writes only when the read
// differs from it.
func (c *RepoConfigs) Put(repository string, cfg *repoconfig.Config, readAt time.Time) {
	if c == nil {
		return
	}
	if c.db == nil || (cfg != nil && cfg.Text() == "") {
		c.remember(repository, keptConfig{cfg: cfg, readAt: readAt})
		return
	}
	sha := ""
	if cfg != nil {
		sha = c.shaOf(repository, cfg)
	}
	kept, err := c.store(repository, cfg, sha, readAt)
	switch {
	case err != nil:
		c.log.Warn("could not keep the repository's config in the database; the next read of the file tries again",
			"repository", repository, "err", err)
	case !kept:
		return // a newer read is stored
	}
	c.cache(repository, cfg, sha)
}

// Get returns repository's config as last read, if any.
func (c *RepoConfigs) Get(repository string) (*repoconfig.Config, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	k, ok := c.m[repository]
	c.mu.Unlock()
	if c.db == nil || (ok && k.sha == "") {
		return k.cfg, k.cfg != nil
	}
	cfg, err := c.load(repository, k)
	if err != nil {
		c.log.Warn("could not read the repository's config from the database: answering with this server's last copy",
			"repository", repository, "err", err)
		return k.cfg, k.cfg != nil
	}
	return cfg, cfg != nil
}

// remember keeps k as this process's copy without a database, unless the
// copy kept came from a read that began later.
func (c *RepoConfigs) remember(repository string, k keptConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.m[repository]; ok && kept.readAt.After(k.readAt) {
		return
	}
	c.m[repository] = k
}

// cache keeps cfg, of the file with sha, as this process's parse of what
// the database holds; nil: it holds none.
func (c *RepoConfigs) cache(repository string, cfg *repoconfig.Config, sha string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg == nil {
		delete(c.m, repository)
		return
	}
	c.m[repository] = keptConfig{cfg: cfg, sha: sha}
}

// shaOf is the sha of cfg's file; the Loader hands the same *Config for
// the same file, so the one kept saves hashing it again.
func (c *RepoConfigs) shaOf(repository string, cfg *repoconfig.Config) string {
	c.mu.Lock()
	k := c.m[repository]
	c.mu.Unlock()
	if k.cfg == cfg && k.sha != "" {
		return k.sha
	}
	sum := sha256.Sum256([]byte(cfg.Text()))
	return hex.EncodeToString(sum[:])
}

// store makes the database hold cfg (sha its file's; "" with none) for
// repository, as read by a read that began at readAt, writing only when it
// holds something else. A read that found none leaves a row with sha ""
// (not no row), so that its time stays to compare. It reports whether the
// database holds this read's answer: false when it holds that of a read
// that began later.
//
// read_at is the beginning of the read that wrote the row, not of the
// latest read of that file (which writes nothing): if the file changes
// and changes back within one read's time, the late answer of a read that
// saw it changed can still be stored, until the next read.
func (c *RepoConfigs) store(repository string, cfg *repoconfig.Config, sha string, readAt time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), configsTimeout)
	defer cancel()
	var stored string
	var storedAt int64
	at := store.Micros(readAt)
	err := c.db.Read.QueryRowContext(ctx, `SELECT sha, read_at FROM repo_configs WHERE repository = $1`,
		repository).Scan(&stored, &storedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		stored = ""
	case err != nil:
		return false, err
	}
	if stored == sha {
		return true, nil
	}
	if storedAt > at {
		return false, nil
	}
	text := ""
	if cfg != nil {
		text = cfg.Text()
	}
	res, err := c.db.Write.ExecContext(ctx, `INSERT INTO repo_configs (repository, sha, config, read_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (repository) DO UPDATE SET sha = excluded.sha, config = excluded.config, read_at = excluded.read_at
		WHERE repo_configs.read_at <= excluded.read_at`,
		repository, sha, text, at)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// load reads repository's config from the database; k is this process's
// copy, whose file is not read again when it is the one stored. nil: none.
func (c *RepoConfigs) load(repository string, k keptConfig) (*repoconfig.Config, error) {
	ctx, cancel := context.WithTimeout(context.Background(), configsTimeout)
	defer cancel()
	var sha string
	var text sql.NullString
	err := c.db.Read.QueryRowContext(ctx, `SELECT sha, CASE WHEN sha = $2 THEN NULL ELSE config END
		FROM repo_configs WHERE repository = $1`, repository, k.sha).Scan(&sha, &text)
	switch {
	case errors.Is(err, sql.ErrNoRows) || err == nil && sha == "":
		c.cache(repository, nil, "")
		return nil, nil
	case err != nil:
		return nil, err
	case sha == k.sha:
		return k.cfg, nil
	}
	cfg, problems := repoconfig.LoadWith([]byte(text.String), c.opts)
	if cfg == nil {
		// Stored by a server that checks configs otherwise (another
		// rollout.max_parallel): for this one there is none to use.
		// Kept as none, with its sha, so it is neither loaded nor
		// logged again until it changes.
		c.log.Warn("the repository's stored config does not load with this server's settings", "repository", repository,
			"problems", len(problems))
		c.mu.Lock()
		c.m[repository] = keptConfig{sha: sha}
		c.mu.Unlock()
		return nil, nil
	}
	c.cache(repository, cfg, sha)
	return cfg, nil
}
