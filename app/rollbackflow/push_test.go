package rollbackflow_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/rollbackpr"
)

// PushOf reads GitHub's own push payloads (../shared/github/webhooks/push).
func TestPushOf(t *testing.T) {
	t.Parallel()
	const before, after = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	twoCommits := func(m map[string]any) {
		m["ref"], m["before"], m["after"], m["deleted"], m["forced"] = "refs/heads/main", before, after, false, false
		m["repository"].(map[string]any)["full_name"] = "acme/gitops"
		first := map[string]any{"id": "c1", "tree_id": "t1", "added": []any{"new.yaml"}, "modified": []any{"apps/a.yaml"}, "removed": []any{}}
		second := map[string]any{"id": after, "tree_id": "t2", "added": []any{}, "modified": []any{}, "removed": []any{"old.yaml"}}
		m["commits"], m["head_commit"] = []any{first, second}, second
	}
	tests := []struct {
		name   string
		file   string
		edit   func(map[string]any)
		want   rollbackpr.Push
		wantOK bool
	}{
		{"two commits: every added, modified and removed path, and the head's tree", "with-new-branch.payload.json", twoCommits,
			rollbackpr.Push{Repo: "acme/gitops", Branch: "main", Before: before, After: after, Tree: "t2", Commits: 2,
				Changed: []string{"new.yaml", "apps/a.yaml", "old.yaml"}}, true},
		{"a deleted branch", "payload.json", func(m map[string]any) {
			m["repository"].(map[string]any)["full_name"], m["ref"] = "acme/gitops", "refs/heads/release"
		},
			rollbackpr.Push{Repo: "acme/gitops", Branch: "release", Before: "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
				After: "0000000000000000000000000000000000000000", Deleted: true}, true},
		{"a forced push", "with-new-branch.payload.json", func(m map[string]any) { twoCommits(m); m["forced"] = true },
			rollbackpr.Push{Repo: "acme/gitops", Branch: "main", Before: before, After: after, Tree: "t2", Forced: true, Commits: 2,
				Changed: []string{"new.yaml", "apps/a.yaml", "old.yaml"}}, true},
		{"a tag is no branch", "with-new-branch.payload.json", func(m map[string]any) { twoCommits(m); m["ref"] = "refs/tags/v1" },
			rollbackpr.Push{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := e2etest.Edit(t, githubtest.LoadPayload(t, "push", tt.file), tt.edit)
			var ev github.PushEvent
			if err := json.Unmarshal(body, &ev); err != nil {
				t.Fatal(err)
			}
			got, ok := rollbackflow.PushOf(ev)
			if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PushOf = %+v, %v\nwant      %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
