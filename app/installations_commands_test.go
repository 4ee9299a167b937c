package app

import (
	"slices"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A repository the App leaves forgets which comments' commands ran
// (comment_commands), as it forgets its config: the others keep theirs,
// and so does a repository removed from one installation while another
// still lists it.
func TestUninstalledRepositoriesForgetTheirCommandComments(t *testing.T) {
	const (
		codertocat = 957387 // the created example's installation
		octocat    = 2      // the deleted example's
	)
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		ts.deliverSettled(t, "installation", "created-1", installationEvent(t, "created.payload.json", codertocat, "Codertocat",
			"repositories", "Codertocat/Hello-World", "Codertocat/Space", "Codertocat/Octo", "octocat/Moved"))
		ts.deliverSettled(t, "installation", "created-2", installationEvent(t, "created.payload.json", octocat, "octocat",
			"repositories", "octocat/Hello-World", "octocat/Moved"))
		for i, r := range configured {
			if _, err := ts.db.Write.Exec(`INSERT INTO comment_commands (repository, comment_id, delivery_id, at)
				VALUES ($1, $2, $3, 1)`, r, 5000+i, "comment-delivery"); err != nil {
				t.Fatal(err)
			}
		}

		ts.deliverSettled(t, "installation_repositories", "removed-1", installationEvent(t, "removed.payload.json", codertocat,
			"Codertocat", "repositories_removed", "Codertocat/Space", "octocat/Moved"))
		ts.checkCommandComments(t, "after Codertocat/Space and octocat/Moved were removed from Codertocat's installation",
			"Codertocat/Hello-World", "Codertocat/Octo", "Codertocat/Unrecorded", "octocat/Elsewhere", "octocat/Hello-World", "octocat/Moved")

		// The deleted event lists a repository whose addition never came.
		ts.deliverSettled(t, "installation", "deleted-1", installationEvent(t, "deleted.payload.json", codertocat, "Codertocat",
			"repositories", "Codertocat/Hello-World", "Codertocat/Unrecorded"))
		ts.checkCommandComments(t, "after Codertocat's installation was deleted",
			"octocat/Elsewhere", "octocat/Hello-World", "octocat/Moved")

		ts.deliverSettled(t, "installation", "deleted-2", installationEvent(t, "deleted.payload.json", octocat, "octocat",
			"repositories", "octocat/Hello-World"))
		ts.checkCommandComments(t, "after octocat's installation was deleted", "octocat/Elsewhere")
	})
}

// checkCommandComments fails the test unless exactly want (sorted) have
// command comments recorded.
func (ts *testServer) checkCommandComments(t *testing.T, when string, want ...string) {
	t.Helper()
	got := column[string](t, ts, `SELECT repository FROM comment_commands ORDER BY repository`)
	if !slices.Equal(got, want) {
		t.Errorf("%s: command comments kept for %v, want %v", when, got, want)
	}
}
