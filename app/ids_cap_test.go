package app

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// release_id in facts and rollback_of in releases are capped at
// records.MaxIDLen as the other ids are: one past it is refused 400 naming
// the field, and nothing is stored. A release whose id ripcord built longer
// before its ids were shortened (a rollback in a cluster and environment
// named at length) is still found: by GET, by the facts that echo its id,
// and as the rollback_of of a rollback of it.
func TestReleaseIDsCapped(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, _ := factServer(t, dbURL, nil)
		unknown := strings.Repeat("r", records.MaxIDLen+1)
		var e apiError
		if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact("Progressing", 1, unknown, imageV1), &e); code != http.StatusBadRequest ||
			e.Field != "release_id" || e.Error != "release_id: must be at most 253 characters, got 254" {
			t.Errorf("a fact's release_id one past its cap: %d %+v, want 400 naming release_id", code, e)
		}
		rollback := func(id, of string) map[string]any {
			return map[string]any{"release_id": id, "app": "checkout", "environment": "prod", "cluster": "prod-eu",
				"repository": "acme/checkout", "image": imageV1, "kind": "rollback", "rollback_of": of, "rollback_reason": "errors up"}
		}
		e = apiError{}
		if code := ts.post(t, "/api/v1/releases", testToken, rollback("rb1", unknown), &e); code != http.StatusBadRequest ||
			e.Field != "rollback_of" || e.Error != "rollback_of: must be at most 253 characters, got 254" {
			t.Errorf("rollback_of one past its cap: %d %+v, want 400 naming rollback_of", code, e)
		}
		var list struct{ Releases []any }
		if ts.api(t, "/api/v1/releases", &list); len(list.Releases) != 0 {
			t.Errorf("refused requests stored %d releases", len(list.Releases))
		}

		old := "rollback-1a2b3c4d-abcdef:prod-eu/" + strings.Repeat("p", 300)
		err := ts.db.InDurableTx(context.Background(), func(tx *sql.Tx) error {
			_, _, err := ts.records.OpenRelease(context.Background(), tx, records.Record{ReleaseID: old, App: "checkout",
				Environment: "prod", Cluster: "prod-eu", Repository: "acme/checkout", Image: imageV1, Kind: records.KindPromote},
				time.Now().UTC())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var got records.Record
		if code := ts.api(t, "/api/v1/releases/"+url.PathEscape(old), &got); code != http.StatusOK || got.ReleaseID != old {
			t.Errorf("GET of a release with an id over the cap: %d %q", code, got.ReleaseID)
		}
		e = apiError{}
		if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", clusterFact("Progressing", 1, old, imageV1), &e); code != http.StatusOK {
			t.Errorf("a fact naming a stored release with an id over the cap: %d %+v, want 200", code, e)
		}
		e = apiError{}
		if code := ts.post(t, "/api/v1/releases", testToken, rollback("rb2", old), &e); code != http.StatusCreated {
			t.Errorf("a rollback of a stored release with an id over the cap: %d %+v, want 201", code, e)
		}
	})
}
