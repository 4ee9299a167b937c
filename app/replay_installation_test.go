package app

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// GitHub signs a delivery's body, not its X-GitHub-Delivery id, so a
// captured installation_repositories delivery can be posted again under a
// new id. An "added" posted again after the repository was removed must not
// record it again (GitHub no longer grants it), nor a "removed" posted again
// after it was added back forget it: ripcord applies what GitHub says of the
// repository now (GET /repos/{owner}/{repo}/installation, as the App).
func TestInstallationRepositoriesEventPostedAgainIsNotAppliedAgainstGitHub(t *testing.T) {
	t.Parallel()
	added := githubtest.LoadPayload(t, "installation_repositories", "added.payload.json")
	var m map[string]any
	if err := json.Unmarshal(githubtest.LoadPayload(t, "installation_repositories", "removed.payload.json"), &m); err != nil {
		t.Fatal(err)
	}
	var a map[string]any
	if err := json.Unmarshal(added, &a); err != nil {
		t.Fatal(err)
	}
	// The same installation and repository as the added event.
	m["installation"], m["repositories_removed"] = a["installation"], a["repositories_added"]
	removed, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	const id, repo = 957387, "Codertocat/Space"
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, fake, gh := startWithSuspension(t, dbURL)
		has := func() bool {
			var n int
			if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM installation_repositories WHERE installation_id = $1 AND repository = $2`,
				id, repo).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n == 1
		}
		gh.install(repo, id)
		ts.deliverSettled(t, "installation_repositories", "added-1", added)
		if !has() {
			t.Fatalf("%s not recorded after it was added", repo)
		}
		gh.install(repo, 0)
		ts.deliverSettled(t, "installation_repositories", "removed-1", removed)
		if has() {
			t.Fatalf("%s still recorded after it was removed", repo)
		}
		ts.deliverSettled(t, "installation_repositories", "added-1-posted-again", added)
		if has() {
			t.Errorf("%s recorded again by its added event posted again under a new id, though GitHub says it is not installed", repo)
		}

		// Added back on GitHub, then the old removal posted again.
		gh.install(repo, id)
		ts.deliverSettled(t, "installation_repositories", "added-2", added)
		if !has() {
			t.Fatalf("%s not recorded after it was added back", repo)
		}
		ts.deliverSettled(t, "installation_repositories", "removed-1-posted-again", removed)
		if !has() {
			t.Errorf("%s forgotten by its removed event posted again under a new id, though GitHub says it is installed", repo)
		}

		// A repository GitHub has under another installation is not this one's.
		gh.install(repo, id+1)
		ts.deliverSettled(t, "installation_repositories", "removed-2", removed)
		ts.deliverSettled(t, "installation_repositories", "added-1-posted-once-more", added)
		if has() {
			t.Errorf("%s recorded for installation %d, though GitHub has it under %d", repo, id, id+1)
		}

		for _, r := range fake.Requests() {
			if r.Invalid != "" {
				t.Errorf("%s %s: GitHub would reject it: %s", r.Method, r.Path, r.Invalid)
			}
		}
		if got := fake.Count(http.MethodGet, "/repos/{owner}/{repo}/installation"); got != 7 {
			t.Errorf("%d reads of the repository's installation, want one per event (7)", got)
		}
	})
}

// An installation created or new_permissions_accepted event names the
// installation's repositories of then. Posted again under a new id (or
// delivered late) after one was removed, it must not record that one
// again: ripcord records the repositories GitHub lists for the
// installation now (GET /installation/repositories, with its token), and
// so also one added since.
func TestInstallationEventPostedAgainRecordsOnlyWhatGitHubHasNow(t *testing.T) {
	t.Parallel()
	for _, example := range []string{"created.payload.json", "new_permissions_accepted.payload.json"} {
		t.Run(example, func(t *testing.T) {
			event := githubtest.LoadPayload(t, "installation", example)
			removed := removedEventOf(t, event)
			const id, repo, added = 957387, "Codertocat/Hello-World", "Codertocat/Space"
			testdb.Each(t, func(t *testing.T, dbURL string) {
				ts, fake, gh := startWithSuspension(t, dbURL)
				gh.install(repo, id)
				ts.deliverSettled(t, "installation", "event-1", event)
				if got := ts.repositoriesOf(t, id); len(got) != 1 || got[0] != repo {
					t.Fatalf("after the event, installation %d has %v recorded, want [%s]", id, got, repo)
				}
				gh.install(repo, 0)
				ts.deliverSettled(t, "installation_repositories", "removed-1", removed)
				gh.install(added, id)
				ts.deliverSettled(t, "installation", "event-1-posted-again", event)
				if got := ts.repositoriesOf(t, id); len(got) != 1 || got[0] != added {
					t.Errorf("after the event posted again under a new id, installation %d has %v recorded, want [%s]: "+
						"what GitHub lists now (%s was removed, %s added since)", id, got, added, repo, added)
				}

				lists := 0
				for _, r := range fake.Requests() {
					if r.Invalid != "" {
						t.Errorf("%s %s: GitHub would reject it: %s", r.Method, r.Path, r.Invalid)
					}
					if r.Route != "/installation/repositories" {
						continue
					}
					lists++
					if r.Method != http.MethodGet || r.Query.Get("per_page") != "100" {
						t.Errorf("list read %s %s?%s, want GET with per_page=100", r.Method, r.Path, r.Query.Encode())
					}
					if got, ok := fake.TokenInstallation(&http.Request{Header: r.Header}); !ok || got != id {
						t.Errorf("list read with the token of installation %d (%v), want %d's", got, ok, id)
					}
				}
				if lists != 2 {
					t.Errorf("%d reads of the installation's repositories, want one per installation event (2)", lists)
				}
			})
		})
	}
}

// removedEventOf is an installation_repositories removed event of the
// installation and first repository of an installation event.
func removedEventOf(t *testing.T, installation []byte) []byte {
	t.Helper()
	var ev, m map[string]any
	if err := json.Unmarshal(installation, &ev); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(githubtest.LoadPayload(t, "installation_repositories", "removed.payload.json"), &m); err != nil {
		t.Fatal(err)
	}
	m["installation"], m["repositories_removed"] = ev["installation"], ev["repositories"].([]any)[:1]
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// repositoriesOf lists the repositories recorded for installation id, by name.
func (ts *testServer) repositoriesOf(t *testing.T, id int64) []string {
	t.Helper()
	return column[string](t, ts, `SELECT repository FROM installation_repositories WHERE installation_id = $1 ORDER BY repository`, id)
}

// GitHub gives a suspended installation no token, so its repositories
// cannot be listed; the App's read of each repository's installation
// answers still. A created event posted again while the installation is
// suspended records only those of its repositories GitHub has installed.
func TestInstallationEventOfASuspendedInstallationAsksOfEachRepository(t *testing.T) {
	t.Parallel()
	var ev map[string]any
	if err := json.Unmarshal(githubtest.LoadPayload(t, "installation", "created.payload.json"), &ev); err != nil {
		t.Fatal(err)
	}
	kept := ev["repositories"].([]any)[0].(map[string]any)
	gone := map[string]any{"id": 1296270, "node_id": "R_gone", "name": "Gone", "full_name": "Codertocat/Gone", "private": false}
	ev["repositories"] = []any{kept, gone}
	event, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	const id = 957387
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ts, fake, gh := startWithSuspension(t, dbURL)
		gh.set(true)
		gh.install("Codertocat/Hello-World", id) // Codertocat/Gone removed since
		ts.deliverSettled(t, "installation", "created-posted-again", event)
		if got := ts.repositoriesOf(t, id); len(got) != 1 || got[0] != "Codertocat/Hello-World" {
			t.Errorf("suspended installation %d has %v recorded, want [Codertocat/Hello-World]: Codertocat/Gone is not installed now", id, got)
		}
		if !ts.installationSuspended(t, id) {
			t.Error("the installation is recorded active; GitHub says suspended")
		}
		for _, r := range fake.Requests() {
			if r.Invalid != "" {
				t.Errorf("%s %s: GitHub would reject it: %s", r.Method, r.Path, r.Invalid)
			}
			if r.Route == "/repos/{owner}/{repo}/installation" {
				if err := checkAppJWT(t, r.Header.Get("Authorization")); err != nil {
					t.Errorf("%s not asked as the App: %v", r.Path, err)
				}
			}
		}
		if got := fake.Count(http.MethodGet, "/repos/{owner}/{repo}/installation"); got != 2 {
			t.Errorf("%d reads of a repository's installation, want one per repository of the event (2)", got)
		}
	})
}

// When GitHub cannot be asked, the event's repositories are not recorded
// from its payload (that is what a replay during an outage would need):
// the delivery fails and is retried.
func TestInstallationEventIsRetriedWhenGitHubCannotListItsRepositories(t *testing.T) {
	t.Parallel()
	created := githubtest.LoadPayload(t, "installation", "created.payload.json")
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{DeliveryMaxAttempts: 2, RetryBase: time.Millisecond}, func(c *config.Config) {
			// Nothing listens on port 1 of loopback.
			c.GitHub.AppID, c.GitHub.PrivateKey, c.GitHub.APIURL = githubtest.AppID, githubtest.AppPrivateKey(t), "http://127.0.0.1:1/"
		})
		if code, resp := ts.deliver(t, "installation", "created-1", created, githubtest.Sign(testSecret, created)); code != 202 {
			t.Fatalf("created-1: %d %s", code, resp)
		}
		waitFor(t, "the delivery to fail for good", 120*time.Second, func() bool {
			return ts.delivery(t, "created-1").State == DeliveryFailed
		})
		d := ts.delivery(t, "created-1")
		if d.Attempts != 2 || !contains(d.LastError, "repositories of installation 957387") {
			t.Errorf("the delivery shows attempts %d and last_error %q, want 2 and that the installation's repositories could not be read", d.Attempts, d.LastError)
		}
		if got := ts.repositoriesOf(t, 957387); len(got) != 0 {
			t.Errorf("with GitHub unreachable the payload's repositories %v were recorded", got)
		}
	})
}
