package configload

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/repoconfig"
)

const valid = "version: 1\napps:\n  checkout:\n    environments:\n      staging:\n        workflows: [deploy.yml]\n"

// client is an installation client of the App against a fake GitHub, with
// ghclient's middlewares (the ETag cache among them).
func client(t *testing.T, fake *githubtest.Server) *github.Client {
	t.Helper()
	cc, err := ghclient.New(ghclient.Config{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t), APIURL: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	gh, err := cc.NewInstallationClient(githubtest.InstallationID)
	if err != nil {
		t.Fatal(err)
	}
	return gh
}

func contentReads(fake *githubtest.Server, repo string) []int {
	var out []int
	for _, r := range fake.Requests() {
		if r.Route == "/repos/{owner}/{repo}/contents/{path}" && strings.EqualFold(r.Params["owner"]+"/"+r.Params["repo"], repo) {
			out = append(out, r.Status)
		}
	}
	return out
}

func TestLoad(t *testing.T) {
	ctx := context.Background()
	t.Run("reads the default branch", func(t *testing.T) {
		fake := githubtest.NewServer(t)
		fake.PutFile("acme/checkout", "main", ".github/ripcord.yml", valid)
		res, err := NewLoader().Load(ctx, client(t, fake).Repositories, "acme/checkout", "")
		if err != nil || !res.Valid() || res.Source.Fallback || res.Source.Repository != "acme/checkout" || res.Source.SHA == "" {
			t.Fatalf("Load = %+v, %v; want a valid config from acme/checkout", res, err)
		}
		if got := contentReads(fake, "acme/.github"); len(got) != 0 {
			t.Errorf("read the organisation's repository although the repository has a config: %v", got)
		}
	})
	t.Run("falls back to the organisation's .github repository", func(t *testing.T) {
		fake := githubtest.NewServer(t)
		fake.PutFile("acme/.github", "main", ".github/ripcord.yml", valid)
		res, err := NewLoader().Load(ctx, client(t, fake).Repositories, "acme/checkout", "")
		if err != nil || !res.Valid() || !res.Source.Fallback || res.Source.Repository != "acme/.github" {
			t.Fatalf("Load = %+v, %v; want the organisation's config", res, err)
		}
	})
	t.Run("a repository without any config is left alone", func(t *testing.T) {
		fake := githubtest.NewServer(t)
		res, err := NewLoader().Load(ctx, client(t, fake).Repositories, "acme/checkout", "")
		if err != nil || res.Found || res.Err() == nil {
			t.Fatalf("Load = %+v, %v; want not found, without an error", res, err)
		}
		if got := contentReads(fake, "acme/.github"); len(got) != 1 {
			t.Errorf("reads of the organisation's repository: %v, want one", got)
		}
	})
	// The answer to a repository without a config sends its people to that
	// repository, and says the organisation's was looked at too; never the
	// organisation's .github as the repository without one.
	t.Run("a missing config is named where it was asked for", func(t *testing.T) {
		fake := githubtest.NewServer(t)
		gh := client(t, fake).Repositories
		sha := fake.PutFile("acme/checkout", "main", "README.md", "no config here")
		for _, tt := range []struct{ repository, ref, want string }{
			{"acme/checkout", "", "no .github/ripcord.yml in acme/checkout, nor in its organisation's acme/.github repository"},
			{"acme/.github", "", "no .github/ripcord.yml in acme/.github, the organisation's .github repository"},
			{"acme/checkout", sha, "no .github/ripcord.yml in acme/checkout at " + sha},
		} {
			res, err := NewLoader().Load(ctx, gh, tt.repository, tt.ref)
			if err != nil || res.Found {
				t.Fatalf("Load(%s, %q) = %+v, %v; want not found", tt.repository, tt.ref, res, err)
			}
			if got := res.Err(); got == nil || got.Error() != tt.want {
				t.Errorf("Load(%s, %q).Err() = %v, want %q", tt.repository, tt.ref, got, tt.want)
			}
			if res.Source.Repository != tt.repository || res.Source.Fallback {
				t.Errorf("Load(%s, %q).Source = %+v, want the repository asked about, no fallback", tt.repository, tt.ref, res.Source)
			}
		}
	})
	t.Run("an invalid file is found with its problems", func(t *testing.T) {
		fake := githubtest.NewServer(t)
		fake.PutFile("acme/checkout", "main", ".github/ripcord.yml", "version: 1\nretries: 3\n")
		res, err := NewLoader().Load(ctx, client(t, fake).Repositories, "acme/checkout", "")
		if err != nil || !res.Found || res.Config != nil || len(res.Problems) != 1 || !errors.Is(res.Err(), ErrInvalid) {
			t.Fatalf("Load = %+v, %v; want one problem", res, err)
		}
		if p := res.Problems[0]; p.Line != 2 || !strings.Contains(res.Err().Error(), "retries") {
			t.Errorf("problem = %+v, err %v; want line 2 naming retries", p, res.Err())
		}
	})
	t.Run("a commit is read as it is and never replaced by the organisation's", func(t *testing.T) {
		fake := githubtest.NewServer(t)
		fake.PutFile("acme/.github", "main", ".github/ripcord.yml", valid)
		sha := fake.PutFile("acme/checkout", "main", "README.md", "no config here")
		res, err := NewLoader().Load(ctx, client(t, fake).Repositories, "acme/checkout", sha)
		if err != nil || res.Found {
			t.Fatalf("Load at %s = %+v, %v; want not found", sha, res, err)
		}
	})
}

// A second read of an unchanged config costs a 304; a changed one is seen
// at once.
func TestRereadIsA304AndAChangeIsSeenAtOnce(t *testing.T) {
	ctx := context.Background()
	fake := githubtest.NewServer(t)
	fake.PutFile("acme/checkout", "main", ".github/ripcord.yml", valid)
	gh, l := client(t, fake), NewLoader()
	for range 3 {
		if res, err := l.Load(ctx, gh.Repositories, "acme/checkout", ""); err != nil || !res.Valid() {
			t.Fatalf("Load = %+v, %v", res, err)
		}
	}
	fake.PutFile("acme/checkout", "main", ".github/ripcord.yml", "version: 1\nstall_after: nope\n")
	res, err := l.Load(ctx, gh.Repositories, "acme/checkout", "")
	if err != nil || res.Valid() {
		t.Fatalf("Load after the change = %+v, %v; want the new, invalid file", res, err)
	}
	got := contentReads(fake, "acme/checkout")
	t.Logf("config reads: %v", got)
	if want := []int{200, 304, 304, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses of the reads = %v, want %v", got, want)
	}
}

// Every capability's loader checks a file as the server does: a wave's
// parallel above the default 16 is valid on a server that allows it.
func TestLoaderForTheServersMaxParallel(t *testing.T) {
	ctx := context.Background()
	fake := githubtest.NewServer(t)
	fake.PutFile("acme/checkout", "main", ".github/ripcord.yml", `version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: c
        targets: [{host: a, labels: {region: eu-1}}]
        rollout:
          waves: [{name: all, select: "region=eu-1", parallel: 20}]
`)
	gh := client(t, fake).Repositories
	res, err := NewLoader().Load(ctx, gh, "acme/checkout", "")
	if err != nil || res.Valid() {
		t.Fatalf("default server: valid=%v err=%v, want parallel 20 refused", res.Valid(), err)
	}
	d := pipeline.Deps{Config: &config.Config{Rollout: config.Rollout{MaxParallel: 32}}}
	res, err = NewLoaderFor(d).Load(ctx, gh, "acme/checkout", "")
	if err != nil || !res.Valid() {
		t.Fatalf("max_parallel 32: valid=%v problems=%v err=%v", res.Valid(), res.Problems, err)
	}
}

// A retried check-run job looks for the run an earlier attempt made by
// name. One that a workflow's token (a workflow running ripcord validate,
// say) or another App made is not it: GitHub would refuse every update.
func TestFindCheckRunIgnoresAnotherAppsRun(t *testing.T) {
	fake := githubtest.NewServer(t)
	gh := client(t, fake)
	const repo, sha = "acme/checkout", "abcdef0123456789abcdef0123456789abcdef01"
	ctx := context.Background()
	fake.AddCheckRun(repo, githubtest.CheckRun{Name: CheckName, HeadSHA: sha, Conclusion: "success", AppSlug: "github-actions"})
	if id, err := findCheckRun(ctx, gh, githubtest.AppID, "acme", "checkout", sha, CheckName); err != nil || id != 0 {
		t.Errorf("with only another App's run: %d (%v), want 0: ripcord creates its own", id, err)
	}
	own := fake.AddCheckRun(repo, githubtest.CheckRun{Name: CheckName, HeadSHA: sha, Conclusion: "failure"})
	fake.AddCheckRun(repo, githubtest.CheckRun{Name: CheckName, HeadSHA: sha, Conclusion: "success", AppSlug: "github-actions"})
	if id, err := findCheckRun(ctx, gh, githubtest.AppID, "acme", "checkout", sha, CheckName); err != nil || id != own.ID {
		t.Errorf("with ripcord's run and a newer one of another App: %d (%v), want ripcord's %d", id, err, own.ID)
	}
}

// A default-branch read leaves the repository's config in the server's
// RepoConfigs, for readers that must not call GitHub (the web pages); a
// read of another commit does not, and a config that went missing or no
// longer loads is forgotten.
func TestLoadKeepsTheDefaultBranchConfig(t *testing.T) {
	ctx := context.Background()
	fake := githubtest.NewServer(t)
	gh := client(t, fake).Repositories
	configs := pipeline.NewRepoConfigs()
	l := NewLoaderFor(pipeline.Deps{Config: &config.Config{}, Configs: configs})
	const repo = "acme/checkout"
	fake.PutFile(repo, "main", ".github/ripcord.yml", valid+"eligibility: {window: 7}\n")
	if _, err := l.Load(ctx, gh, repo, ""); err != nil {
		t.Fatal(err)
	}
	if cfg, ok := configs.Get(repo); !ok || cfg.Eligibility.Window != 7 {
		t.Fatalf("after a default-branch read: %+v, %v; want the config with window 7", cfg, ok)
	}
	sha := fake.PutFile(repo, "feature", ".github/ripcord.yml", valid+"eligibility: {window: 9}\n")
	if _, err := l.Load(ctx, gh, repo, sha); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := configs.Get(repo); cfg == nil || cfg.Eligibility.Window != 7 {
		t.Errorf("a read of another commit replaced the default branch's config: %+v", cfg)
	}
	fake.PutFile(repo, "main", ".github/ripcord.yml", "version: [\n")
	if _, err := l.Load(ctx, gh, repo, ""); err != nil {
		t.Fatal(err)
	}
	if cfg, ok := configs.Get(repo); ok {
		t.Errorf("a config that no longer loads is still kept: %+v", cfg)
	}
}

// heldGetter answers the first read of the repository's own file with what
// GitHub says at that moment, but only once release is closed: a job that
// asked before the file was added and finishes after a read that found it.
type heldGetter struct {
	gh      ContentsGetter
	repo    string
	asked   chan struct{} // closed once the held read has GitHub's answer
	release chan struct{}
	held    bool
}

func (h *heldGetter) GetContents(ctx context.Context, owner, repo, path string, opts *github.RepositoryContentGetOptions) (*github.RepositoryContent, []*github.RepositoryContent, *github.Response, error) {
	file, dir, resp, err := h.gh.GetContents(ctx, owner, repo, path, opts)
	if owner+"/"+repo == h.repo && !h.held {
		h.held = true
		close(h.asked)
		<-h.release
	}
	return file, dir, resp, err
}

// Two jobs read the default branch's config: the first asks GitHub before
// the file is added and gets its answer (none) only after the second has
// read the file. The newer read is what is kept: the late answer of the
// older one does not make the file forgotten, on the server that read it
// nor on another one on the database (the restart of a flaky test that
// found the default window after the file had been read).
func TestLoadKeepsTheNewestReadNotTheLastToFinish(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		fake := githubtest.NewServer(t)
		gh := client(t, fake).Repositories
		db := testdb.OpenMigrated(t, dbURL)
		configs := pipeline.NewStoredRepoConfigs(db, repoconfig.Options{}, nil)
		l := NewLoaderFor(pipeline.Deps{Config: &config.Config{}, Configs: configs})
		const repo = "acme/checkout"
		fake.PutFile(repo, "main", "README.md", "checkout\n")
		held := &heldGetter{gh: gh, repo: repo, asked: make(chan struct{}), release: make(chan struct{})}
		older := make(chan error, 1)
		go func() {
			_, err := l.Load(ctx, held, repo, "")
			older <- err
		}()
		<-held.asked
		fake.PutFile(repo, "main", ".github/ripcord.yml", valid+"eligibility: {window: 7}\n")
		if _, err := l.Load(ctx, held, repo, ""); err != nil {
			t.Fatal(err)
		}
		close(held.release)
		if err := <-older; err != nil {
			t.Fatal(err)
		}
		if cfg, ok := configs.Get(repo); !ok || cfg.Eligibility.Window != 7 {
			t.Errorf("after an older read that found no file finished last: %+v, %v; want the config with window 7", cfg, ok)
		}
		restarted := pipeline.NewStoredRepoConfigs(db, repoconfig.Options{}, nil)
		if cfg, ok := restarted.Get(repo); !ok || cfg.Eligibility.Window != 7 {
			t.Errorf("another server on the database: %+v, %v; want the config with window 7", cfg, ok)
		}
	})
}
