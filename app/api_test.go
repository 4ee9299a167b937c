package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

func TestAPIRequiresTheToken(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	for _, c := range []struct{ name, auth string }{
		{"no Authorization header", ""},
		{"wrong token", "Bearer nope"},
		{"basic auth instead of bearer", "Basic " + testToken},
	} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/v1/deliveries", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", c.name, resp.StatusCode)
		}
	}
}

func TestDeliveriesAPIListsNewestFirstAndValidatesLimit(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		body := githubtest.LoadPayload(t, "ping", "payload.json")
		for _, id := range []string{"first", "second", "third"} {
			ts.deliver(t, "ping", id, body, githubtest.Sign(testSecret, body))
		}
		var list struct{ Deliveries []Delivery }
		if code := ts.api(t, "/api/v1/deliveries?limit=2", &list); code != 200 {
			t.Fatalf("status %d", code)
		}
		if len(list.Deliveries) != 2 || list.Deliveries[0].ID != "third" || list.Deliveries[1].ID != "second" {
			t.Errorf("limit=2 listed %+v, want third then second", list.Deliveries)
		}
		var e apiError
		if code := ts.api(t, "/api/v1/deliveries?limit=0", &e); code != 400 || e.Field != "limit" {
			t.Errorf("limit=0: status %d field %q, want 400 naming limit", code, e.Field)
		}
		if code := ts.api(t, "/api/v1/deliveries/nope", &e); code != 404 {
			t.Errorf("unknown delivery: status %d, want 404", code)
		}
	})
}

func TestInstallationEventsKeepTheInstallationTable(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		created := githubtest.LoadPayload(t, "installation", "created.payload.json")
		ts.deliver(t, "installation", "inst-1", created, githubtest.Sign(testSecret, created))
		ts.waitSettled(t)
		var repos int
		if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM installation_repositories`).Scan(&repos); err != nil {
			t.Fatal(err)
		}
		if repos == 0 {
			t.Fatalf("installation created: no repositories recorded")
		}
		removed := githubtest.LoadPayload(t, "installation_repositories", "removed.payload.json")
		ts.deliver(t, "installation_repositories", "inst-2", removed, githubtest.Sign(testSecret, removed))
		deleted := githubtest.LoadPayload(t, "installation", "deleted.payload.json")
		ts.deliver(t, "installation", "inst-3", deleted, githubtest.Sign(testSecret, deleted))
		ts.waitSettled(t)
		for _, id := range []string{"inst-1", "inst-2", "inst-3"} {
			if d := ts.delivery(t, id); d.State != DeliveryProcessed {
				t.Errorf("%s ended %s (%s), want processed", id, d.State, d.LastError)
			}
		}
	})
}

func TestOperatorEndpoints(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "ripcord_queue_depth", "/": "Set-up is not finished"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// Before set-up / leads to /setup, which without the set-up token
		// of the start-up log says where it is (app/setup's tests).
		status := http.StatusOK
		if path == "/" {
			status = http.StatusForbidden
		}
		if resp.StatusCode != status || !contains(string(b), want) {
			t.Errorf("GET %s: status %d, body without %q", path, resp.StatusCode, want)
		}
	}
}

// Repositories added to a suspended installation do not make it active:
// the payload's installation still carries its suspended_at.
func TestRepositoriesAddedToASuspendedInstallationKeepItSuspended(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		suspend := githubtest.LoadPayload(t, "installation", "suspend.payload.json")
		ts.deliver(t, "installation", "suspend-1", suspend, githubtest.Sign(testSecret, suspend))
		ts.waitSettled(t)
		var ev map[string]any
		if err := json.Unmarshal(githubtest.LoadPayload(t, "installation_repositories", "added.payload.json"), &ev); err != nil {
			t.Fatal(err)
		}
		var susp map[string]any
		_ = json.Unmarshal(suspend, &susp)
		ev["installation"] = susp["installation"] // the same installation, as GitHub sends it while suspended
		added, _ := json.Marshal(ev)
		ts.deliver(t, "installation_repositories", "added-1", added, githubtest.Sign(testSecret, added))
		ts.waitSettled(t)
		if d := ts.delivery(t, "added-1"); d.State != DeliveryProcessed {
			t.Fatalf("installation_repositories ended %s (%s), want processed", d.State, d.LastError)
		}
		var suspended bool
		if err := ts.db.Read.QueryRow(`SELECT suspended FROM installations WHERE id = 16598467`).Scan(&suspended); err != nil {
			t.Fatal(err)
		}
		if !suspended {
			t.Error("a suspended installation became active when repositories were added to it")
		}
		if ok, err := installedOn(context.Background(), ts.db.Read, "Codertocat/Space"); err != nil || ok {
			t.Errorf("installedOn a repository of a suspended installation = %v (err %v), want false", ok, err)
		}
	})
}

// GitHub does not promise delivery order, and a redelivery can come long
// after: an installation event older than the installation's deletion must
// not bring it back. The payloads are GitHub's examples, with the deleted
// event made about the created installation (GitHub does not necessarily
// move updated_at when an installation is deleted, so it carries the same
// updated_at as the created event).
func TestAnOlderInstallationEventDoesNotUndoItsDeletion(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		created := githubtest.LoadPayload(t, "installation", "created.payload.json")
		var createdEv, deletedEv map[string]any
		if err := json.Unmarshal(created, &createdEv); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(githubtest.LoadPayload(t, "installation", "deleted.payload.json"), &deletedEv); err != nil {
			t.Fatal(err)
		}
		deletedEv["installation"] = createdEv["installation"]
		deleted, _ := json.Marshal(deletedEv)
		added := githubtest.LoadPayload(t, "installation_repositories", "added.payload.json")

		ts.deliver(t, "installation", "created-1", created, githubtest.Sign(testSecret, created))
		ts.waitSettled(t)
		ts.deliver(t, "installation", "deleted-1", deleted, githubtest.Sign(testSecret, deleted))
		ts.waitSettled(t)
		// Older events, arriving after the deletion under their own GUIDs.
		ts.deliver(t, "installation", "created-late", created, githubtest.Sign(testSecret, created))
		ts.deliver(t, "installation_repositories", "added-late", added, githubtest.Sign(testSecret, added))
		ts.waitSettled(t)
		for _, id := range []string{"created-1", "deleted-1", "created-late", "added-late"} {
			if d := ts.delivery(t, id); d.State != DeliveryProcessed {
				t.Errorf("%s ended %s (%s), want processed", id, d.State, d.LastError)
			}
		}
		var n int
		if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM installations WHERE id = 957387`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Error("the deleted installation came back when an older event arrived after its deletion")
		}
		for _, repo := range []string{"Codertocat/Hello-World", "Codertocat/Space"} {
			if ok, err := installedOn(context.Background(), ts.db.Read, repo); err != nil || ok {
				t.Errorf("installedOn(%s) after the installation was deleted = %v (err %v), want false", repo, ok, err)
			}
		}

		// GitHub's other examples give the times as RFC 3339 strings: an
		// unsuspend with the same updated_at as the deletion comes late.
		suspend := githubtest.LoadPayload(t, "installation", "suspend.payload.json")
		unsuspend := githubtest.LoadPayload(t, "installation", "unsuspend.payload.json")
		var suspendEv map[string]any
		if err := json.Unmarshal(suspend, &suspendEv); err != nil {
			t.Fatal(err)
		}
		deletedEv["installation"] = suspendEv["installation"]
		deleted2, _ := json.Marshal(deletedEv)
		ts.deliver(t, "installation", "suspend-1", suspend, githubtest.Sign(testSecret, suspend))
		ts.waitSettled(t)
		ts.deliver(t, "installation", "deleted-2", deleted2, githubtest.Sign(testSecret, deleted2))
		ts.waitSettled(t)
		ts.deliver(t, "installation", "unsuspend-late", unsuspend, githubtest.Sign(testSecret, unsuspend))
		ts.waitSettled(t)
		if d := ts.delivery(t, "unsuspend-late"); d.State != DeliveryProcessed {
			t.Errorf("unsuspend-late ended %s (%s), want processed", d.State, d.LastError)
		}
		if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM installations WHERE id = 16598467`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Error("the deleted installation came back when an older unsuspend arrived after its deletion")
		}
	})
}
