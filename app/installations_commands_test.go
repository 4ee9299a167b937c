package app

import (
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// The record of which comments' /ripcord commands ran (comment_commands)
// outlives an uninstall: once the App is installed again, a captured
// command comment posted again must still run nothing.
func TestCommandCommentsOutliveAnUninstall(t *testing.T) {
	t.Parallel()
	const codertocat = 957387 // the created example's installation
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		ts.deliverSettled(t, "installation", "created-1", installationEvent(t, "created.payload.json", codertocat, "Codertocat",
			"repositories", "Codertocat/Hello-World"))
		if _, err := ts.db.Write.Exec(`INSERT INTO comment_commands (repository, comment_id, delivery_id, at)
			VALUES ('Codertocat/Hello-World', 5000, 'comment-delivery', 1)`); err != nil {
			t.Fatal(err)
		}
		ts.deliverSettled(t, "installation", "deleted-1", installationEvent(t, "deleted.payload.json", codertocat, "Codertocat",
			"repositories", "Codertocat/Hello-World"))
		if got := column[string](t, ts, `SELECT repository FROM repo_configs`); len(got) != 0 {
			t.Fatalf("the uninstall was not applied (configs kept for %v): the test shows nothing", got)
		}
		if got := column[int64](t, ts, `SELECT comment_id FROM comment_commands`); len(got) != 1 || got[0] != 5000 {
			t.Errorf("after the uninstall, comment_commands holds %v; want comment 5000 kept", got)
		}
	})
}
