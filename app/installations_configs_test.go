package app

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/repoconfig"
)

// A repository the App leaves, removed from its installation or with the
// installation deleted, leaves no .github/ripcord.yml behind: no read
// refreshes it any more, and the readers that do not call GitHub
// (eligibility, the pages) would go on answering from it. The other
// repositories keep theirs, those of another installation too, and so
// does a repository removed from one installation while another still
// lists it.
func TestUninstalledRepositoriesLeaveNoConfigBehind(t *testing.T) {
	t.Parallel()
	const (
		codertocat = 957387 // the created example's installation
		octocat    = 2      // the deleted example's
	)
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		ts.deliverSettled(t, "installation", "created-1", installationEvent(t, "created.payload.json", codertocat, "Codertocat",
			"repositories", "Codertocat/Hello-World", "Codertocat/Space", "Codertocat/Octo", "octocat/Moved"))
		ts.deliverSettled(t, "installation", "created-2", installationEvent(t, "created.payload.json", octocat, "octocat",
			"repositories", "octocat/Hello-World", "octocat/Moved"))
		cfg, problems := repoconfig.Load([]byte("version: 1\neligibility: {window: 3}\n"))
		if cfg == nil {
			t.Fatalf("config does not load: %v", problems)
		}
		for _, r := range configured {
			ts.repoConfigs.Put(r, cfg, time.Now())
		}
		if got := ts.storedConfigs(t); !slices.Equal(got, slices.Sorted(slices.Values(configured))) {
			t.Fatalf("configs stored: %v, want %v", got, configured)
		}

		ts.deliverSettled(t, "installation_repositories", "removed-1", installationEvent(t, "removed.payload.json", codertocat,
			"Codertocat", "repositories_removed", "Codertocat/Space", "octocat/Moved"))
		ts.checkConfigs(t, "after Codertocat/Space and octocat/Moved were removed from Codertocat's installation",
			"Codertocat/Hello-World", "Codertocat/Octo", "Codertocat/Unrecorded", "octocat/Elsewhere", "octocat/Hello-World", "octocat/Moved")

		// Both installations met GitHub's rate limit in a rollout.
		for _, id := range []int64{codertocat, octocat} {
			if _, err := ts.db.Write.Exec(`INSERT INTO rollout_rate_limits (installation_id, began_at, reset_at) VALUES ($1, 1, 2)`, id); err != nil {
				t.Fatal(err)
			}
		}
		// The deleted event lists a repository whose addition never came.
		ts.deliverSettled(t, "installation", "deleted-1", installationEvent(t, "deleted.payload.json", codertocat, "Codertocat",
			"repositories", "Codertocat/Hello-World", "Codertocat/Unrecorded"))
		ts.checkConfigs(t, "after Codertocat's installation was deleted",
			"octocat/Elsewhere", "octocat/Hello-World", "octocat/Moved")
		if got := ts.rateLimited(t); !slices.Equal(got, []int64{octocat}) {
			t.Errorf("after Codertocat's installation was deleted, rate limits kept for installations %v, want only octocat's %d", got, octocat)
		}

		ts.deliverSettled(t, "installation", "deleted-2", installationEvent(t, "deleted.payload.json", octocat, "octocat",
			"repositories", "octocat/Hello-World"))
		ts.checkConfigs(t, "after octocat's installation was deleted", "octocat/Elsewhere")
	})
}

// rateLimited lists the installations with a rollout rate limit stored.
func (ts *testServer) rateLimited(t *testing.T) []int64 {
	t.Helper()
	return column[int64](t, ts, `SELECT installation_id FROM rollout_rate_limits ORDER BY installation_id`)
}

// configured are the repositories TestUninstalledRepositoriesLeaveNoConfigBehind
// keeps a config of: octocat/Elsewhere is in no installation it hears of.
var configured = []string{"Codertocat/Hello-World", "Codertocat/Space", "Codertocat/Octo", "Codertocat/Unrecorded",
	"octocat/Hello-World", "octocat/Moved", "octocat/Elsewhere"}

// installationEvent is the example payload name of an installation (or
// installation_repositories) event made about installation id of account,
// with list ("repositories", "repositories_removed") naming repos.
func installationEvent(t *testing.T, name string, id int64, account, list string, repos ...string) []byte {
	t.Helper()
	event := "installation"
	if list == "repositories_removed" {
		event = "installation_repositories"
	}
	var ev map[string]any
	if err := json.Unmarshal(githubtest.LoadPayload(t, event, name), &ev); err != nil {
		t.Fatal(err)
	}
	inst := ev["installation"].(map[string]any)
	inst["id"] = id
	inst["account"].(map[string]any)["login"] = account
	var entries []map[string]any
	for i, full := range repos {
		_, repo, _ := strings.Cut(full, "/")
		entries = append(entries, map[string]any{"id": 1000 + i, "node_id": "MDEwOlJlcG9zaXRvcnkxMDAw",
			"name": repo, "full_name": full, "private": false})
	}
	ev[list] = entries
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storedConfigs lists the repositories with a config in the database.
func (ts *testServer) storedConfigs(t *testing.T) []string {
	t.Helper()
	return column[string](t, ts, `SELECT repository FROM repo_configs ORDER BY repository`)
}

// column runs a query of one column and returns its values.
func column[T any](t *testing.T, ts *testServer, query string, args ...any) []T {
	t.Helper()
	rows, err := ts.db.Read.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkConfigs fails the test unless exactly want (sorted) have a config
// in the database, and the server answers with a config for those only.
func (ts *testServer) checkConfigs(t *testing.T, when string, want ...string) {
	t.Helper()
	if got := ts.storedConfigs(t); !slices.Equal(got, want) {
		t.Errorf("%s: configs stored for %v, want %v", when, got, want)
	}
	for _, r := range configured {
		if _, ok := ts.repoConfigs.Get(r); ok != slices.Contains(want, r) {
			t.Errorf("%s: the server has a config for %s: %v, want %v", when, r, ok, !ok)
		}
	}
}
