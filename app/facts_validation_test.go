package app

import (
	"maps"
	"net/http"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A refused fact is answered 400 with the field named as the body spells it
// (within a batch, facts[i].field) and every problem of the fact in one
// line, "; " apart, as POST /api/v1/releases says them; and nothing of a
// refused request is stored. The message used to keep Go's newlines
// between problems, and inside a batch named the field without its index.
func TestFactValidationMessages(t *testing.T) {
	t.Parallel()
	with := func(change map[string]any, drop ...string) map[string]any {
		f := clusterFact("Progressing", 1, "r1", imageV1)
		maps.Copy(f, change)
		for _, k := range drop {
			delete(f, k)
		}
		return f
	}
	tooMany := make([]any, maxFactsPerRequest+1)
	for i := range tooMany {
		tooMany[i] = with(nil)
	}
	cases := []struct {
		name       string
		body       any
		field, msg string
	}{
		{"no source, no observed_at", map[string]any{}, "observed_at",
			"observed_at: is required; source: is required (rollout, deployment, argocd or task)"},
		{"unknown source", with(map[string]any{"source": "helm"}), "source",
			`source: must be rollout, deployment, argocd or task, got "helm"`},
		{"generation 0 and no uid", with(map[string]any{"generation": 0, "observed_generation": 0}, "uid"), "uid",
			"uid: is required; generation: must be positive, got 0"},
		{"negative observed_generation", with(map[string]any{"observed_generation": -1}), "observed_generation",
			"observed_generation: must not be negative, got -1"},
		{"unknown phase", with(map[string]any{"phase": "Running"}), "phase",
			`phase: must be Progressing, Paused, Healthy, Degraded, SyncFailed or Deleted, got "Running"`},
		{"step past step_count", with(map[string]any{"step": 4}), "step", "step: 4 is past step_count 3"},
		{"no release_id", with(nil, "release_id"), "release_id", "release_id: is required"},
		{"argocd fact with neither release_id nor revision", with(map[string]any{"source": "argocd"}, "release_id"), "release_id",
			"release_id: is required (or revision, for argocd facts)"},
		{"an empty image", with(map[string]any{"images": []string{imageV1, " "}}), "images[1]", "images[1]: is empty"},
		{"the second fact of a batch", map[string]any{"facts": []any{with(nil), with(map[string]any{"phase": "Running"}, "uid")}},
			"facts[1].uid", `facts[1].uid: is required; facts[1].phase: must be Progressing, Paused, Healthy, Degraded, SyncFailed or Deleted, got "Running"`},
		{"an empty batch", map[string]any{"facts": []any{}}, "facts", "send 1 to 500 facts"},
		{"too many facts", map[string]any{"facts": tooMany}, "facts", "send 1 to 500 facts"},
	}
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, _ := factServer(t, dbURL, nil)
		for _, c := range cases {
			var e apiError
			code := ts.post(t, "/api/v1/facts/prod-eu", "tok-eu", c.body, &e)
			if code != http.StatusBadRequest || e.Field != c.field || e.Error != c.msg {
				t.Errorf("%s: %d %+v, want 400 naming %q: %q", c.name, code, e, c.field, c.msg)
			}
		}
		var audit struct{ Events []map[string]any }
		ts.api(t, "/api/v1/audit", &audit)
		if len(audit.Events) != 0 {
			t.Errorf("refused facts left %d audit events", len(audit.Events))
		}
	})
}
