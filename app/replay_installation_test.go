package app

import (
	"encoding/json"
	"net/http"
	"testing"

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
	testdb.Each(t, func(t *testing.T, dbURL string) {
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
