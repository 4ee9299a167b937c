package app

import (
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// Every refusal of POST /api/v1/releases names the field as the request
// spells it, and says all that is wrong at once. Two did not: a negative
// pr.number (and a 409 on pr) was named pr_number / pr_url, fields the
// request does not have, and a missing cluster was answered alone, with a
// message of its own shape ("cluster: required"), hiding the rest.
func TestPostReleaseValidation(t *testing.T) {
	t.Parallel()
	valid := func() map[string]any {
		return map[string]any{"release_id": "r1", "app": "checkout", "environment": "prod", "cluster": "prod-eu",
			"repository": "acme/checkout", "image": imageV1}
	}
	with := func(change map[string]any, drop ...string) map[string]any {
		b := valid()
		maps.Copy(b, change)
		for _, k := range drop {
			delete(b, k)
		}
		return b
	}
	cases := []struct {
		name       string
		body       any
		field, msg string
	}{
		{"empty object", map[string]any{}, "release_id",
			"release_id: is required; app: is required; environment: is required; cluster: is required; image: is required"},
		{"no cluster", with(nil, "cluster"), "cluster", "cluster: is required"},
		{"no cluster and no image", with(nil, "cluster", "image"), "cluster", "cluster: is required; image: is required"},
		{"blank app", with(map[string]any{"app": "  "}), "app", "app: is required"},
		{"unknown field", with(map[string]any{"state": "healthy"}), "state", "state: unknown field"},
		{"wrong type", with(map[string]any{"release_id": 7}), "release_id", "release_id: expected string, got JSON number"},
		{"unknown kind", with(map[string]any{"kind": "revert"}), "kind", `kind: must be "promote" or "rollback", got "revert"`},
		{"rollback without rollback_of and reason", with(map[string]any{"kind": "rollback"}), "rollback_of",
			"rollback_of: is required; rollback_reason: is required"},
		{"rollback of itself", with(map[string]any{"kind": "rollback", "rollback_of": "r1", "rollback_reason": "bad canary"}),
			"rollback_of", "rollback_of: cannot name the rollback release itself"},
		{"promote naming rollback_of", with(map[string]any{"rollback_of": "r0"}), "rollback_of",
			`rollback_of: must be empty when kind is "promote"`},
		{"bad digest", with(map[string]any{"digest": "sha256:abc"}), "digest",
			`digest: must look like "sha256:<64 hex>" or "sha512:<128 hex>", got "sha256:abc"`},
		{"digest other than the image's", with(map[string]any{"digest": "sha256:" + strings.Repeat("2", 64)}), "digest",
			"digest: sha256:" + strings.Repeat("2", 64) + " differs from the digest pinned in image (sha256:" + strings.Repeat("1", 64) + ")"},
		{"negative pr.number", with(map[string]any{"pr": map[string]any{"url": "https://github.com/acme/checkout/pull/1", "number": -1}}),
			"pr.number", "pr.number: must not be negative, got -1"},
		{"pr.url that is not a web address", with(map[string]any{"pr": map[string]any{"url": "javascript:alert(1)", "number": 1}}),
			"pr.url", `pr.url: must be the pull request's http(s) address, got "javascript:alert(1)"`},
		{"pr.url too long", with(map[string]any{"pr": map[string]any{"url": "https://github.com/" + strings.Repeat("a", 2040), "number": 1}}),
			"pr.url", "pr.url: must be at most 2048 characters, got 2059"},
		{"pr.number of the wrong type", with(map[string]any{"pr": map[string]any{"number": "1"}}), "pr.number",
			"pr.number: expected int, got JSON string"},
		{"unknown field in pr", with(map[string]any{"pr": map[string]any{"url": "https://github.com/acme/checkout/pull/1", "nuber": 1}}),
			"pr.nuber", "pr.nuber: unknown field"},
		{"not an object", `[1]`, "", "expected a JSON object with \"release_id\""},
		{"trailing data", `{"release_id": "r1"} {}`, "", "unexpected data after the JSON value"},
		{"empty body", ``, "", `the body is empty: expected a JSON object with "release_id", "app", "environment", "cluster" and "image"`},
	}
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServerWith(t, dbURL, Options{}, nil)
		for _, c := range cases {
			var e apiError
			code := ts.post(t, "/api/v1/releases", testToken, c.body, &e)
			if code != http.StatusBadRequest || e.Field != c.field || (c.field != "" && e.Error != c.msg) {
				t.Errorf("%s: %d %+v, want 400 naming %q: %q", c.name, code, e, c.field, c.msg)
			}
		}
		var list struct{ Releases []any }
		if ts.api(t, "/api/v1/releases", &list); len(list.Releases) != 0 {
			t.Errorf("refused requests stored %d releases", len(list.Releases))
		}
		// A 409 names the request's field too.
		open := with(map[string]any{"pr": map[string]any{"url": "https://github.com/acme/checkout/pull/1", "number": 1}})
		if code := ts.post(t, "/api/v1/releases", testToken, open, nil); code != http.StatusCreated {
			t.Fatalf("open r1: %d", code)
		}
		for field, pr := range map[string]map[string]any{
			"pr.url":    {"url": "https://github.com/acme/checkout/pull/2", "number": 1},
			"pr.number": {"url": "https://github.com/acme/checkout/pull/1", "number": 2},
		} {
			var e apiError
			if code := ts.post(t, "/api/v1/releases", testToken, with(map[string]any{"pr": pr}), &e); code != http.StatusConflict || e.Field != field {
				t.Errorf("r1 again with another %s: %d %+v, want 409 naming %s", field, code, e, field)
			}
		}
	})
}
