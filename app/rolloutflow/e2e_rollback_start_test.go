package rolloutflow_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// POST /api/v1/rollouts (and `ripcord rollout start`) naming a rollback
// release starts no rollout of it, but stops the rollout of the release
// it rolls back. The answer said the environment had no rollout: in
// .github/ripcord.yml, which it has, and nothing of the stop. It now
// refuses on release_id and says what happened: no rollout was started,
// how the rollback is deployed instead (its rollback mode, or the merge of
// its pull request), and whether the rolled-back release's rollout was
// stopped by this request, before, or had ended.
func TestARolloutStartOfARollbackSaysWhatItDid(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, rollbackStartSaysWhatItDid)
}

func rollbackStartSaysWhatItDid(t *testing.T, dbURL string) {
	e := startOn(t, dbURL, e2eConfig, "write")
	first := &scene{Env: e, id: openRollout(e, "r1:prod-eu/prod", "v1")}
	e.WaitFor("r1's canary", wait, func() bool { return len(e.GitHub.Dispatches(repo)) == 1 })

	// The rollback is opened as a release with no start job (as one
	// opened before this server ran): only the request below acts on it.
	e.Stop()
	openRollback(t, dbURL, records.Record{ReleaseID: "rb1:prod-eu/prod", App: "checkout", Environment: "prod",
		Cluster: "prod-eu", Repository: repo, Image: "v0", Kind: records.KindRollback, RollbackOf: "r1:prod-eu/prod",
		RollbackReason: "error rate"})
	e.Restart()

	start := func(release string) (int, struct{ Error, Field string }) {
		t.Helper()
		code, body := e.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"release_id": "`+release+`"}`))
		var out struct{ Error, Field string }
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("POST /api/v1/rollouts of %s answered %d: %s", release, code, body)
		}
		return code, out
	}
	want := func(code int, out struct{ Error, Field string }, says ...string) {
		t.Helper()
		if code != http.StatusUnprocessableEntity || out.Field != "release_id" || strings.Contains(out.Error, "has no rollout:") {
			t.Errorf("answered %d %+v, want 422 on release_id saying what was done", code, out)
		}
		for _, s := range says {
			if !strings.Contains(out.Error, s) {
				t.Errorf("answer %q does not say %q", out.Error, s)
			}
		}
	}

	code, out := start("rb1:prod-eu/prod")
	want(code, out, "rb1:prod-eu/prod is a rollback of r1:prod-eu/prod", "no rollout of it was started",
		"rollback mode", "the rollout "+first.id+" of r1:prod-eu/prod is stopped")
	e.WaitFor("r1's rollout to stop", wait, func() bool { return first.status().Rollout.Status == rolloutflow.Failed })
	if n := e.Int(`SELECT COUNT(*) FROM rollouts WHERE release_id = 'rb1:prod-eu/prod'`); n != 0 {
		t.Errorf("the rollback release has %d rollouts, want none", n)
	}

	// Sent again: nothing more is stopped, and the answer says so.
	code, out = start("rb1:prod-eu/prod")
	want(code, out, "the rollout "+first.id+" of r1:prod-eu/prod had ended (failed): nothing was stopped")

	// A rollback opened as a pull request is rolled out when it merges.
	openRollback(t, dbURL, records.Record{ReleaseID: "rb2:prod-eu/prod", App: "checkout", Environment: "prod",
		Cluster: "prod-eu", Repository: repo, Image: "v0", Kind: records.KindRollback, RollbackOf: "r1:prod-eu/prod",
		RollbackReason: "error rate", PRNumber: 7})
	code, out = start("rb2:prod-eu/prod")
	want(code, out, "when its pull request #7 is merged")
}

// openRollback stores rec in the database at dbURL, as any opening of a
// release does, but with no job to start its rollout.
func openRollback(t *testing.T, dbURL string, rec records.Record) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.InTx(ctx, func(tx *sql.Tx) error {
		_, _, err := records.NewStore(db).OpenRelease(ctx, tx, rec, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
