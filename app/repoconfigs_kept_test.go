package app

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// GET /api/v1/eligibility without ?window= takes the repository's
// eligibility.window as ripcord last read its .github/ripcord.yml. That
// read was kept in the reading server's memory only: a server started
// after it (a restart, or another replica on the same PostgreSQL)
// answered with the default window of 5 until it read the file itself, so
// the same question got another answer with nothing changed. The read is
// kept in the database: every server on it answers with the window of 2
// the file sets, and once the file is deleted (and read so) every server
// answers with the default again: the config does not come back from the
// database.
func TestEligibilityWindowIsTheSameAfterARestartAndOnEveryReplica(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		gh := githubtest.NewServer(t)
		const repo = "acme/checkout"
		// A server that reads the config has the fake GitHub; the others
		// have none (nothing answers at its address), so that whatever
		// they use comes from the database: not even a job of theirs can
		// read the file.
		reader := func() *stoppableServer { return startStoppable(t, dbURL, gh.URL()) }
		noGitHub := func() *stoppableServer { return startStoppable(t, dbURL, "http://127.0.0.1:1/") }
		first := reader()
		installed := installationCommit(github.InstallationEvent{Action: github.String("created"),
			Installation: &github.Installation{ID: github.Int64(githubtest.InstallationID)},
			Repositories: []*github.Repository{{ID: github.Int64(11), FullName: github.String(repo)}}}, time.Now(), false)
		if err := first.db.InTx(ctx, func(tx *sql.Tx) error { return installed(ctx, tx) }); err != nil {
			t.Fatal(err)
		}
		// r1 ran healthy, then two more ran: the third newest is in the
		// default window of 5, not in the repository's window of 2.
		image := func(i int) string { return fmt.Sprintf("registry.example/shop/checkout@sha256:%064x", i) }
		openRelease(t, first.testServer, "r1", image(1))
		for _, phase := range []string{"Progressing", "Healthy"} {
			first.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact(phase, 1, "r1", image(1)), nil)
		}
		for i := 2; i <= 3; i++ {
			id := fmt.Sprintf("r%d", i)
			openRelease(t, first.testServer, id, image(i))
			first.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact("Progressing", i, id, image(i)), nil)
		}
		eligible := func(ts *stoppableServer) bool {
			t.Helper()
			var a struct{ Eligible bool }
			q := url.Values{"app": {"checkout"}, "environment": {"prod"}, "cluster": {"prod-eu"}, "image": {image(1)}}
			if code := ts.api(t, "/api/v1/eligibility?"+q.Encode(), &a); code != 200 {
				t.Fatalf("eligibility: status %d", code)
			}
			return a.Eligible
		}
		if !eligible(first) {
			t.Fatal("r1 is not eligible while the repository has no config: the test assumes the default window of 5")
		}
		// The file is added, and a capability reads it (here the stall
		// check's read).
		gh.PutFile(repo, "main", ".github/ripcord.yml", "version: 1\neligibility: {window: 2}\n")
		readConfig := func(ts *stoppableServer) {
			t.Helper()
			if _, err := ts.repoStallAfter(ctx, repo); err != nil {
				t.Fatal(err)
			}
		}
		readConfig(first)
		if eligible(first) {
			t.Fatal("the server that read the window of 2 still calls r1 eligible")
		}

		postgres := first.db.Dialect == store.Postgres
		if postgres {
			replica := noGitHub()
			if eligible(replica) {
				t.Error("a second replica, which did not read the config, calls r1 eligible: it used the default window, not the repository's 2")
			}
			replica.stop()
		}
		first.stop()
		restarted := noGitHub()
		if eligible(restarted) {
			t.Error("after a restart r1 is eligible: the server used the default window, not the repository's 2 read before the restart")
		}
		restarted.stop()

		// The file is deleted, as a push without it does, and read so.
		second := reader()
		if eligible(second) {
			t.Error("after a second restart r1 is eligible: the server used the default window, not the repository's 2")
		}
		deleteConfig(t, second.testServer, repo)
		readConfig(second)
		if !eligible(second) {
			t.Fatal("after the config was deleted and read so, r1 is still not eligible: the window of 2 is still used")
		}
		if postgres {
			replica := noGitHub()
			if !eligible(replica) {
				t.Error("a replica still uses the window of 2 of a config that was deleted")
			}
			replica.stop()
		}
		second.stop()
		if !eligible(noGitHub()) {
			t.Error("after a restart the deleted config's window of 2 came back from the database")
		}
	})
}

// deleteConfig commits, on repository's main branch, a tree without its
// .github/ripcord.yml, through GitHub's Git Data API.
func deleteConfig(t *testing.T, ts *testServer, repository string) {
	t.Helper()
	ctx := context.Background()
	gh, err := ts.github.NewInstallationClient(githubtest.InstallationID)
	if err != nil {
		t.Fatal(err)
	}
	owner, name := "acme", repository[len("acme/"):]
	ref, _, err := gh.Git.GetRef(ctx, owner, name, "heads/main")
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := gh.Git.CreateTree(ctx, owner, name, "", []*github.TreeEntry{{Path: github.String("README.md"),
		Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("checkout\n")}})
	if err != nil {
		t.Fatal(err)
	}
	commit, _, err := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String("drop ripcord"), Tree: tree,
		Parents: []*github.Commit{{SHA: ref.Object.SHA}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref.Object.SHA = commit.SHA
	if _, _, err := gh.Git.UpdateRef(ctx, owner, name, ref, false); err != nil {
		t.Fatal(err)
	}
}

// stoppableServer is a testServer a test stops before it ends (to start
// another on the same database, as a restart does).
type stoppableServer struct {
	*testServer
	stop func()
}

// startStoppable starts a server with cluster prod-eu (token tok-eu) and
// the fake GitHub's App, whose API is at githubURL.
func startStoppable(t *testing.T, dbURL, githubURL string) *stoppableServer {
	t.Helper()
	cfg := testConfig(dbURL)
	cfg.GitHub = config.GitHub{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t),
		WebhookSecrets: []string{testSecret}, APIURL: githubURL}
	cfg.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
	ts, stop := runServer(t, cfg, Options{})
	return &stoppableServer{testServer: ts, stop: stop}
}
