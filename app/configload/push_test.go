package configload

import (
	"testing"

	"github.com/google/go-github/v66/github"
)

func TestChangesConfig(t *testing.T) {
	sha := "4f2c9d1e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d"
	commit := func(added, modified, removed []string) *github.HeadCommit {
		return &github.HeadCommit{Added: added, Modified: modified, Removed: removed}
	}
	cfg := []string{".github/ripcord.yml"}
	cases := []struct {
		name string
		ev   github.PushEvent
		want bool
	}{
		{"a commit that modifies the config", github.PushEvent{After: &sha, Commits: []*github.HeadCommit{commit(nil, []string{"a.go"}, nil), commit(nil, cfg, nil)}}, true},
		{"a commit that adds the config", github.PushEvent{After: &sha, Commits: []*github.HeadCommit{commit(cfg, nil, nil)}}, true},
		{"a removed config is not checked", github.PushEvent{After: &sha, Commits: []*github.HeadCommit{commit(nil, nil, cfg)}}, false},
		{"another ripcord.yml is not the config", github.PushEvent{After: &sha, Commits: []*github.HeadCommit{commit([]string{"docs/.github/ripcord.yml"}, nil, nil)}}, false},
		{"a deleted branch has nothing to check", github.PushEvent{After: github.String("0000000000000000000000000000000000000000"), Deleted: github.Bool(true),
			Commits: []*github.HeadCommit{commit(nil, cfg, nil)}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ChangesConfig(c.ev); got != c.want {
				t.Errorf("ChangesConfig = %v, want %v", got, c.want)
			}
		})
	}
}
