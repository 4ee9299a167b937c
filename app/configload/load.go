package configload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/repoconfig"
)

// OrgRepository is the repository of an organisation whose .github/ripcord.yml
// applies to every repository that has none of its own (GitHub's own
// convention for community health files).
const OrgRepository = ".github"

// parseCacheEntries bounds the parsed configs kept by blob sha.
const parseCacheEntries = 256

// ContentsGetter is the one GitHub call loading needs; *github.Client's
// Repositories service has it.
type ContentsGetter interface {
	GetContents(ctx context.Context, owner, repo, path string, opts *github.RepositoryContentGetOptions) (*github.RepositoryContent, []*github.RepositoryContent, *github.Response, error)
}

// Source says where a config was read from.
type Source struct {
	Repository string `json:"repository"` // owner/name the file was read from
	Path       string `json:"path"`
	Ref        string `json:"ref,omitempty"` // empty: the default branch
	SHA        string `json:"sha"`           // the file's blob sha
	// Fallback is true when the file came from the organisation's .github
	// repository because the repository has none.
	Fallback bool `json:"fallback,omitempty"`
}

// String names the source for people: "acme/.github:.github/ripcord.yml@main".
func (s Source) String() string {
	ref := s.Ref
	if ref == "" {
		ref = "default branch"
	}
	return fmt.Sprintf("%s:%s@%s", s.Repository, s.Path, ref)
}

// Result is one load. Found is false when neither the repository nor the
// organisation has a config: ripcord then leaves the repository alone.
type Result struct {
	Found    bool
	Source   Source
	Config   *repoconfig.Config // nil unless Found and valid
	Problems []repoconfig.Problem
}

// Valid reports whether a config was found and loaded without problems.
func (r Result) Valid() bool { return r.Found && r.Config != nil }

// Loader reads and parses configs, keeping parsed results by blob sha so an
// unchanged file (a 304 from GitHub) is not parsed again. It is safe for
// concurrent use.
type Loader struct {
	mu     sync.Mutex
	parsed map[string]parsed
	opts   repoconfig.Options
	// latest, when set, gets every default-branch read (see
	// pipeline.RepoConfigs).
	latest *pipeline.RepoConfigs
}

type parsed struct {
	cfg      *repoconfig.Config
	problems []repoconfig.Problem
}

// NewLoader returns an empty Loader.
func NewLoader() *Loader { return &Loader{parsed: map[string]parsed{}} }

// NewLoaderFor returns an empty Loader that checks configs as this server
// does (its rollout.max_parallel). Every capability loads configs with one,
// so a file valid for one is valid for all.
// Its default-branch reads are kept in d.Configs, for readers that must
// not call GitHub.
func NewLoaderFor(d pipeline.Deps) *Loader {
	l := NewLoaderWith(ServerOptions(d))
	l.latest = d.Configs
	return l
}

// ServerOptions are the server's side of a config check.
func ServerOptions(d pipeline.Deps) repoconfig.Options {
	if d.Config == nil {
		return repoconfig.Options{}
	}
	return repoconfig.Options{MaxParallel: d.Config.Rollout.MaxParallel}
}

// NewLoaderWith returns an empty Loader that checks configs against a
// server's options.
func NewLoaderWith(opts repoconfig.Options) *Loader {
	return &Loader{parsed: map[string]parsed{}, opts: opts}
}

// Load reads repository's config. With ref empty it reads the default branch
// and falls back to the organisation's .github repository; with a ref (a
// commit being checked) it reads that commit only, because the question is
// what that commit says.
func (l *Loader) Load(ctx context.Context, gh ContentsGetter, repository, ref string) (Result, error) {
	owner, name, ok := strings.Cut(repository, "/")
	if !ok || owner == "" || name == "" {
		return Result{}, fmt.Errorf("load config: repository %q is not owner/name", repository)
	}
	began := time.Now()
	res, err := l.read(ctx, gh, owner, name, ref)
	if err == nil && !res.Found && ref == "" && name != OrgRepository {
		// Without the organisation's file either, the result stays the
		// repository's own: Err names the repository asked about.
		var org Result
		if org, err = l.read(ctx, gh, owner, OrgRepository, ""); err == nil && org.Found {
			res = org
			res.Source.Fallback = true
		}
	}
	if err == nil && ref == "" {
		// What the default branch says now: a config, or none to use
		// (missing or not loading), which forgets the one kept.
		var cfg *repoconfig.Config
		if res.Valid() {
			cfg = res.Config
		}
		l.latest.Put(repository, cfg, began)
	}
	return res, err
}

func (l *Loader) read(ctx context.Context, gh ContentsGetter, owner, name, ref string) (Result, error) {
	src := Source{Repository: owner + "/" + name, Path: repoconfig.Path, Ref: ref}
	var opts *github.RepositoryContentGetOptions
	if ref != "" {
		opts = &github.RepositoryContentGetOptions{Ref: ref}
	}
	file, _, resp, err := gh.GetContents(ctx, owner, name, repoconfig.Path, opts)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return Result{Source: src}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", src, err)
	}
	if file == nil {
		return Result{}, fmt.Errorf("read %s: %s is a directory, not a file", src, repoconfig.Path)
	}
	src.SHA = file.GetSHA()
	if p, ok := l.cached(src.SHA); ok {
		return Result{Found: true, Source: src, Config: p.cfg, Problems: p.problems}, nil
	}
	text, err := file.GetContent()
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", src, err)
	}
	cfg, problems := repoconfig.LoadWith([]byte(text), l.opts)
	l.store(src.SHA, parsed{cfg: cfg, problems: problems})
	return Result{Found: true, Source: src, Config: cfg, Problems: problems}, nil
}

func (l *Loader) cached(sha string) (parsed, bool) {
	if sha == "" {
		return parsed{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.parsed[sha]
	return p, ok
}

// store keeps a parse. The cache is emptied when full: configs change
// rarely, so a simple bound beats bookkeeping.
func (l *Loader) store(sha string, p parsed) {
	if sha == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.parsed) >= parseCacheEntries {
		clear(l.parsed)
	}
	l.parsed[sha] = p
}

// ErrInvalid is wrapped by Result.Err for a config that does not load.
var ErrInvalid = errors.New("the repository config does not load")

// Err is nil for a valid config and otherwise says why there is none to use,
// naming the first problem. For a config not found it names the repository
// asked about first, then where else Load looked: the organisation's
// .github repository, for a default-branch read.
func (r Result) Err() error {
	switch {
	case !r.Found:
		return r.missing()
	case r.Config == nil && len(r.Problems) == 1:
		return fmt.Errorf("%w: %s: %s", ErrInvalid, r.Source, r.Problems[0].Error())
	case r.Config == nil && len(r.Problems) > 1:
		return fmt.Errorf("%w: %s: %s (and %d more problems)", ErrInvalid, r.Source, r.Problems[0].Error(), len(r.Problems)-1)
	case r.Config == nil:
		return fmt.Errorf("%w: %s", ErrInvalid, r.Source)
	}
	return nil
}

// missing says where no config was found, as Load looked.
func (r Result) missing() error {
	src := r.Source
	owner, name, _ := strings.Cut(src.Repository, "/")
	switch {
	case src.Ref != "":
		return fmt.Errorf("no %s in %s at %s", repoconfig.Path, src.Repository, src.Ref)
	case name == OrgRepository:
		return fmt.Errorf("no %s in %s, the organisation's %s repository", repoconfig.Path, src.Repository, OrgRepository)
	}
	return fmt.Errorf("no %s in %s, nor in its organisation's %s/%s repository", repoconfig.Path, src.Repository, owner, OrgRepository)
}
