package app

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// The inventory reports deleted exactly the workloads of its scope (its
// sources and namespace) that it does not hold and that were observed
// before it; a workload of another source (an Argo CD application, a
// Rollout the agent does not watch) or namespace is not its to judge.
func TestAnInventoryDeletesOnlyTheMissingWorkloadsOfItsScope(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, _ := factServer(t, dbURL, nil)
		openRelease(t, ts, "r1", imageV1)
		at := time.Now().UTC()
		workload := func(source, namespace, name, uid string, observed time.Time) map[string]any {
			f := clusterFact("Progressing", 1, "r1", imageV1)
			f["source"], f["namespace"], f["name"], f["uid"] = source, namespace, name, uid
			f["observed_at"] = observed.Format(time.RFC3339Nano)
			return f
		}
		facts := []any{
			workload("deployment", "shop", "gone", "uid-gone", at.Add(-time.Minute)),
			workload("deployment", "shop", "held", "uid-held", at.Add(-time.Minute)),
			workload("deployment", "other", "elsewhere", "uid-else", at.Add(-time.Minute)),
			workload("rollout", "shop", "canary", "uid-canary", at.Add(-time.Minute)),
			workload("argocd", "shop", "app", "uid-argo", at.Add(-time.Minute)),
			workload("deployment", "shop", "new", "uid-new", at.Add(time.Second)),
		}
		if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", map[string]any{"facts": facts}, nil); code != http.StatusOK {
			t.Fatalf("facts: %d", code)
		}
		inv := map[string]any{"observed_at": at.Format(time.RFC3339Nano), "namespace": "shop",
			"sources": []string{"deployment"}, "uids": []string{"uid-held"}}
		var e apiError
		if code := ts.post(t, "/api/v1/facts/prod-eu/inventory", "tok-us", inv, &e); code != http.StatusForbidden {
			t.Errorf("another cluster's token: %d %s, want 403", code, e.Error)
		}
		if code := ts.post(t, "/api/v1/facts/prod-eu/inventory", "tok-eu", map[string]any{"observed_at": at, "sources": []string{"deployment"}}, &e); code != http.StatusBadRequest || e.Field != "uids" {
			t.Errorf("no uids: %d %+v, want 400 naming uids (a missing list must not delete everything)", code, e)
		}
		var out struct {
			Deleted []struct{ Workload, UID, Outcome string }
		}
		if code := ts.post(t, "/api/v1/facts/prod-eu/inventory", "tok-eu", inv, &out); code != http.StatusOK {
			t.Fatalf("inventory: %d", code)
		}
		if len(out.Deleted) != 1 || out.Deleted[0].Workload != "prod-eu/shop/deployment/gone" || out.Deleted[0].UID != "uid-gone" {
			t.Errorf("deleted %+v, want prod-eu/shop/deployment/gone only", out.Deleted)
		}
		obs, err := ts.records.Observed(context.Background(), []string{"r1"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range obs {
			names = append(names, o.Name)
		}
		slices.Sort(names)
		if want := []string{"app", "canary", "elsewhere", "held", "new"}; !slices.Equal(names, want) {
			t.Errorf("running %v, want %v", names, want)
		}
		// Sent again, it finds nothing more to delete.
		if code := ts.post(t, "/api/v1/facts/prod-eu/inventory", "tok-eu", inv, &out); code != http.StatusOK || len(out.Deleted) != 0 {
			t.Errorf("the same inventory again: %d %+v, want nothing deleted", code, out.Deleted)
		}
	})
}

// An inventory's 400 names the field in its message as well as in field,
// as every other 400 of the API does: the agent logs the message, and
// "is required" alone did not say what was.
func TestInventoryRefusalsNameTheFieldInTheMessage(t *testing.T) {
	t.Parallel()
	ts := startServerWith(t, testdb.URL(t, "sqlite"), Options{}, func(c *configT) {
		c.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})
	})
	at := time.Now().UTC().Format(time.RFC3339Nano)
	for _, c := range []struct {
		name  string
		inv   map[string]any
		field string
		msg   string
	}{
		{"no observed_at", map[string]any{"sources": []string{"deployment"}, "uids": []string{}},
			"observed_at", "observed_at: is required"},
		{"no sources", map[string]any{"observed_at": at, "uids": []string{}},
			"sources", "sources: is required: the sources (deployment, rollout, argocd) whose every workload uids lists"},
		{"no uids", map[string]any{"observed_at": at, "sources": []string{"deployment"}},
			"uids", "uids: is required (an empty list when the source holds no workload)"},
		{"an unknown source", map[string]any{"observed_at": at, "sources": []string{"deployment", "pods"}, "uids": []string{}},
			"sources[1]", `sources[1]: must be deployment, rollout or argocd, got "pods"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e apiError
			code := ts.post(t, "/api/v1/facts/prod-eu/inventory", "tok-eu", c.inv, &e)
			if code != http.StatusBadRequest || e.Field != c.field || e.Error != c.msg {
				t.Errorf("%d %+v, want 400 on %q saying %q", code, e, c.field, c.msg)
			}
		})
	}
}
