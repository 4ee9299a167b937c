package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/repoconfig"
)

func loadConfig(t testing.TB, text string) *repoconfig.Config {
	t.Helper()
	cfg, problems := repoconfig.Load([]byte(text))
	if cfg == nil {
		t.Fatalf("config does not load: %v", problems)
	}
	return cfg
}

func window(t *testing.T, c *RepoConfigs, repository string) int {
	t.Helper()
	cfg, ok := c.Get(repository)
	if !ok {
		return 0
	}
	return cfg.Eligibility.Window
}

// Every default-branch read of a config puts it, and the file rarely
// changes: the same file read again writes nothing (read_at, written with
// the file, keeps the value the test set), a changed one is written and
// seen by another RepoConfigs on the database (another server, or this
// one after a restart), and a config gone (Put nil) is gone there too.
func TestStoredRepoConfigsWriteOnlyWhatChanged(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		db := testdb.OpenMigrated(t, dbURL)
		const repo = "acme/checkout"
		readAt := func() int64 {
			t.Helper()
			var at int64
			if err := db.Read.QueryRow(`SELECT read_at FROM repo_configs WHERE repository = $1`, repo).Scan(&at); err != nil {
				t.Fatal(err)
			}
			return at
		}
		one := NewStoredRepoConfigs(db, repoconfig.Options{}, nil)
		one.Put(repo, loadConfig(t, "version: 1\neligibility: {window: 3}\n"), time.Now())
		if _, err := db.Write.Exec(`UPDATE repo_configs SET read_at = 1 WHERE repository = $1`, repo); err != nil {
			t.Fatal(err)
		}
		// The same file, parsed again (a new *Config): still no write.
		one.Put(repo, loadConfig(t, "version: 1\neligibility: {window: 3}\n"), time.Now())
		if at := readAt(); at != 1 {
			t.Errorf("the same file read again was written again (read_at %d)", at)
		}
		other := NewStoredRepoConfigs(db, repoconfig.Options{}, nil)
		if w := window(t, other, repo); w != 3 {
			t.Errorf("another server on the database: window %d, want 3", w)
		}
		one.Put(repo, loadConfig(t, "version: 1\neligibility: {window: 4}\n"), time.Now())
		if at := readAt(); at == 1 {
			t.Error("a changed file was not written")
		}
		if w := window(t, other, repo); w != 4 {
			t.Errorf("another server after the file changed: window %d, want 4", w)
		}
		one.Put(repo, nil, time.Now())
		if w := window(t, other, repo); w != 0 {
			t.Errorf("another server after the config went: window %d, want none", w)
		}
		if w := window(t, NewStoredRepoConfigs(db, repoconfig.Options{}, nil), repo); w != 0 {
			t.Errorf("a restarted server after the config went: window %d, want none", w)
		}
	})
}

// A Config built in code (a test's) has no file to store: the RepoConfigs
// it is put in answers with it, others on the database do not see it.
func TestStoredRepoConfigsKeepABuiltConfigInMemory(t *testing.T) {
	db := testdb.OpenMigrated(t, testdb.URL(t, "sqlite"))
	const repo = "acme/checkout"
	one, other := NewStoredRepoConfigs(db, repoconfig.Options{}, nil), NewStoredRepoConfigs(db, repoconfig.Options{}, nil)
	one.Put(repo, loadConfig(t, "version: 1\neligibility: {window: 3}\n"), time.Now())
	one.Put(repo, &repoconfig.Config{Eligibility: repoconfig.Eligibility{Window: 9}}, time.Now())
	if w := window(t, one, repo); w != 9 {
		t.Errorf("the RepoConfigs a built config was put in: window %d, want 9", w)
	}
	if w := window(t, other, repo); w != 3 {
		t.Errorf("another on the database: window %d, want the stored file's 3", w)
	}
}

// A file stored by a server that allows more (rollout.max_parallel 32)
// does not load on one with the default 16: there it is no config, and
// stays none when the database cannot be read (Get answers with what the
// process last knew, which is none, not a nil config said to be there).
func TestStoredRepoConfigsThatDoNotLoadHereAreNone(t *testing.T) {
	dbURL := testdb.URL(t, "sqlite")
	db := testdb.OpenMigrated(t, dbURL)
	const repo = "acme/checkout"
	cfg, problems := repoconfig.LoadWith([]byte(`version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: c
        targets: [{host: a, labels: {region: eu-1}}]
        rollout:
          waves: [{name: all, select: "region=eu-1", parallel: 20}]
`), repoconfig.Options{MaxParallel: 32})
	if cfg == nil {
		t.Fatalf("with max_parallel 32: %v", problems)
	}
	NewStoredRepoConfigs(db, repoconfig.Options{MaxParallel: 32}, nil).Put(repo, cfg, time.Now())
	strictDB, err := store.Open(context.Background(), dbURL) // closed below, not by a cleanup
	if err != nil {
		t.Fatal(err)
	}
	strict := NewStoredRepoConfigs(strictDB, repoconfig.Options{}, nil)
	if got, ok := strict.Get(repo); ok || got != nil {
		t.Fatalf("with the default max_parallel: %v, %v; want none", got, ok)
	}
	strictDB.Close()
	if got, ok := strict.Get(repo); ok || got != nil {
		t.Errorf("with the database closed: %v, %v; want none still", got, ok)
	}
}

// BenchmarkRepoConfigsPutSameFile is the cost a default-branch read adds
// (a recovery of a failed deploy run, a gate evaluation, ...) when the
// file has not changed, as nearly always: one read of the stored sha.
func BenchmarkRepoConfigsPutSameFile(b *testing.B) {
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			db := testdb.OpenMigrated(b, testdb.URL(b, engine))
			c := NewStoredRepoConfigs(db, repoconfig.Options{}, nil)
			cfg := loadConfig(b, "version: 1\neligibility: {window: 3}\n")
			c.Put("acme/checkout", cfg, time.Now())
			b.ResetTimer()
			for range b.N {
				c.Put("acme/checkout", cfg, time.Now())
			}
		})
	}
}

// Puts come in the order their reads finish, not the order they began: a
// read that began before the one kept changes nothing, whether it found
// another file or none, and a read that found none is remembered as such
// with its time, so that an older read of the file does not bring it back.
// The same holds without a database.
func TestRepoConfigsKeepTheReadThatBeganLast(t *testing.T) {
	const repo = "acme/checkout"
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	check := func(t *testing.T, newConfigs func() *RepoConfigs) {
		c := newConfigs()
		c.Put(repo, loadConfig(t, "version: 1\neligibility: {window: 3}\n"), at(2))
		c.Put(repo, nil, at(1))
		if w := window(t, c, repo); w != 3 {
			t.Errorf("a read that began earlier and found none: window %d, want 3 still", w)
		}
		c.Put(repo, loadConfig(t, "version: 1\neligibility: {window: 4}\n"), at(1))
		if w := window(t, c, repo); w != 3 {
			t.Errorf("a read that began earlier and found another file: window %d, want 3 still", w)
		}
		c.Put(repo, nil, at(3))
		if w := window(t, c, repo); w != 0 {
			t.Errorf("a newer read that found none: window %d, want none", w)
		}
		c.Put(repo, loadConfig(t, "version: 1\neligibility: {window: 3}\n"), at(2))
		if w := window(t, c, repo); w != 0 {
			t.Errorf("an older read of the file after a newer one found none: window %d, want none", w)
		}
		if w := window(t, newConfigs(), repo); w != 0 {
			t.Errorf("another server: window %d, want none", w)
		}
		c.Put(repo, loadConfig(t, "version: 1\neligibility: {window: 5}\n"), at(4))
		if w := window(t, c, repo); w != 5 {
			t.Errorf("a newer read of the file after none: window %d, want 5", w)
		}
	}
	t.Run("memory", func(t *testing.T) {
		c := NewRepoConfigs()
		check(t, func() *RepoConfigs { return c })
	})
	testdb.Each(t, func(t *testing.T, dbURL string) {
		db := testdb.OpenMigrated(t, dbURL)
		check(t, func() *RepoConfigs { return NewStoredRepoConfigs(db, repoconfig.Options{}, nil) })
	})
}
