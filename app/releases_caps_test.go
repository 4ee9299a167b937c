package app

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// POST /api/v1/releases caps what it stores, shows and sends on: each
// field one past its cap is refused 400 naming the field and the cap, and
// nothing is stored; a release with every field at its cap is accepted.
func TestPostReleaseFieldCaps(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("a", n) }
	atCaps := func(id string) map[string]any {
		return map[string]any{"release_id": id + long(253-len(id)), "app": long(253), "environment": long(253),
			"cluster": long(253), "repository": long(39) + "/" + long(100), "image": "registry.example/" + long(1024-17),
			"git_revision": strings.Repeat("f", 64), "config_revision": strings.Repeat("e", 64),
			// 4096 bytes in 2048 characters: the cap counts bytes.
			"kind": "rollback", "rollback_of": "r0", "rollback_reason": strings.Repeat("é", 2048)}
	}
	cases := []struct {
		field string
		value string
		msg   string
	}{
		{"release_id", long(254), "release_id: must be at most 253 characters, got 254"},
		{"app", long(254), "app: must be at most 253 characters, got 254"},
		{"environment", long(254), "environment: must be at most 253 characters, got 254"},
		{"cluster", long(254), "cluster: must be at most 253 characters, got 254"},
		{"image", "registry.example/" + long(1025-17), "image: must be at most 1024 characters, got 1025"},
		{"repository", long(40) + "/" + long(100), "repository: must be at most 140 characters, got 141"},
		{"git_revision", strings.Repeat("f", 65), "git_revision: must be at most 64 characters, got 65"},
		{"config_revision", strings.Repeat("e", 65), "config_revision: must be at most 64 characters, got 65"},
		{"rollback_reason", strings.Repeat("é", 2048) + "!", "rollback_reason: must be at most 4096 bytes, got 4097"},
	}
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, nil)
		for i, c := range cases {
			body := atCaps(fmt.Sprintf("r%d-", i))
			maps.Copy(body, map[string]any{c.field: c.value})
			var e apiError
			code := ts.post(t, "/api/v1/releases", testToken, body, &e)
			if code != http.StatusBadRequest || e.Field != c.field || e.Error != c.msg {
				t.Errorf("%s one past its cap: %d %+v, want 400 naming %s: %q", c.field, code, e, c.field, c.msg)
			}
		}
		var list struct{ Releases []any }
		if ts.api(t, "/api/v1/releases", &list); len(list.Releases) != 0 {
			t.Errorf("refused requests stored %d releases", len(list.Releases))
		}
		var e apiError
		if code := ts.post(t, "/api/v1/releases", testToken, atCaps("at-caps-"), &e); code != http.StatusCreated {
			t.Errorf("a release with every field at its cap: %d %+v, want 201", code, e)
		}
	})
}

// Facts carry some of the same fields, capped alike: a cluster fact's
// images and cluster, a task fact's app, environment, repository,
// deployment_id, version and metadata.commit (which become the record's
// id, app, environment, repository, image and git_revision when it opens
// one).
func TestFactFieldCaps(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("a", n) }
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, issuer := factServer(t, dbURL, nil)
		cluster := clusterFact("Progressing", 1, "r1", "registry.example/"+long(1025-17))
		var e apiError
		if code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", cluster, &e); code != http.StatusBadRequest ||
			e.Field != "images[0]" || e.Error != "images[0]: must be at most 1024 characters, got 1025" {
			t.Errorf("a cluster fact's image one past its cap: %d %+v, want 400 naming images[0]", code, e)
		}
		task := func(change map[string]any) map[string]any {
			f := map[string]any{"source": "task", "repository": "acme/checkout", "workflow_run_id": 42, "run_attempt": 1,
				"status": "in_progress", "app": "checkout", "environment": "prod", "cluster": "prod-eu", "version": "v1",
				"deployment_id": "d1", "observed_at": "2026-01-02T03:04:05Z"}
			maps.Copy(f, change)
			return f
		}
		for _, c := range []struct {
			change     map[string]any
			field, msg string
		}{
			{map[string]any{"app": long(254)}, "app", "app: must be at most 253 characters, got 254"},
			{map[string]any{"environment": long(254)}, "environment", "environment: must be at most 253 characters, got 254"},
			{map[string]any{"cluster": long(254)}, "cluster", "cluster: must be at most 253 characters, got 254"},
			{map[string]any{"deployment_id": long(254)}, "deployment_id", "deployment_id: must be at most 253 characters, got 254"},
			{map[string]any{"version": long(1025)}, "version", "version: must be at most 1024 characters, got 1025"},
			{map[string]any{"metadata": map[string]string{"commit": strings.Repeat("f", 65)}}, "metadata.commit",
				"metadata.commit: must be at most 64 characters, got 65"},
		} {
			var e apiError
			code := ts.post(t, "/api/v1/facts", issuer.Token(t, nil), task(c.change), &e)
			if code != http.StatusBadRequest || e.Field != c.field || e.Error != c.msg {
				t.Errorf("a task fact's %s one past its cap: %d %+v, want 400 naming %s: %q", c.field, code, e, c.field, c.msg)
			}
		}
		repo := long(40) + "/" + long(100)
		token := issuer.Token(t, map[string]any{"repository": repo})
		if code := ts.post(t, "/api/v1/facts", token, task(map[string]any{"repository": repo}), &e); code != http.StatusBadRequest ||
			e.Field != "repository" || e.Error != "repository: must be at most 140 characters, got 141" {
			t.Errorf("a task fact's repository one past its cap: %d %+v, want 400 naming repository", code, e)
		}
		var list struct{ Releases []any }
		if ts.api(t, "/api/v1/releases", &list); len(list.Releases) != 0 {
			t.Errorf("refused facts opened %d releases", len(list.Releases))
		}
		at := task(map[string]any{"app": long(253), "environment": long(253), "deployment_id": long(253),
			"version": long(1024), "metadata": map[string]string{"commit": strings.Repeat("f", 64)}})
		if code := ts.post(t, "/api/v1/facts", issuer.Token(t, nil), at, &e); code != http.StatusOK {
			t.Errorf("a task fact with its fields at their caps: %d %+v, want 200", code, e)
		}
	})
}
