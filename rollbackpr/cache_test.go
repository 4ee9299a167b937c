package rollbackpr_test

import (
	"testing"
	"time"

	"github.com/ripcord/ripcord/rollbackpr"
)

const (
	headA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	headB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	headC = "cccccccccccccccccccccccccccccccccccccccc"
	zero  = "0000000000000000000000000000000000000000"
)

func snapshotAt(commit, content string) rollbackpr.Snapshot {
	return rollbackpr.Snapshot{Commit: commit, Tree: "tree-" + commit[:4], Content: []byte(content), BlobSHA: "blob-" + content}
}

// pushAB is a push of one commit moving main of acme/gitops from headA to headB.
func pushAB(changed ...string) rollbackpr.Push {
	return rollbackpr.Push{Repo: "acme/gitops", Branch: "main", Before: headA, After: headB, Tree: "tree-bbbb", Commits: 1, Changed: changed}
}

func TestMemoryCachePushes(t *testing.T) {
	tests := []struct {
		name     string
		pushes   []rollbackpr.Push
		wantHit  bool
		wantHead string
	}{
		{"a push of another file keeps the release file at the new head",
			[]rollbackpr.Push{pushAB("README.md")}, true, headB},
		{"a push that modifies the release file drops it",
			[]rollbackpr.Push{pushAB(releaseFile)}, false, ""},
		{"a changed path with a leading slash still drops it",
			[]rollbackpr.Push{pushAB("/" + releaseFile)}, false, ""},
		{"a redelivered push changes nothing",
			[]rollbackpr.Push{pushAB("README.md"), pushAB("README.md")}, true, headB},
		{"a push that does not continue the known head drops the branch (one was missed)",
			[]rollbackpr.Push{{Repo: "acme/gitops", Branch: "main", Before: headC, After: headB, Tree: "tree-bbbb", Commits: 1, Changed: []string{"README.md"}}}, false, ""},
		{"a forced push drops the branch",
			[]rollbackpr.Push{func() rollbackpr.Push { p := pushAB("README.md"); p.Forced = true; return p }()}, false, ""},
		{"a deleted branch is dropped",
			[]rollbackpr.Push{{Repo: "acme/gitops", Branch: "main", Before: headA, After: zero, Deleted: true}}, false, ""},
		{"a push listing 20 commits may be cut short: files are dropped",
			[]rollbackpr.Push{func() rollbackpr.Push { p := pushAB("README.md"); p.Commits = rollbackpr.PushCommitsShown; return p }()}, false, ""},
		{"a push listing no commits says nothing about files",
			[]rollbackpr.Push{func() rollbackpr.Push { p := pushAB(); p.Commits = 0; return p }()}, false, ""},
		{"a push without the head's tree drops the branch",
			[]rollbackpr.Push{func() rollbackpr.Push { p := pushAB("README.md"); p.Tree = ""; return p }()}, false, ""},
		{"a push to another branch is not this one's",
			[]rollbackpr.Push{func() rollbackpr.Push { p := pushAB(releaseFile); p.Branch = "feature"; return p }()}, true, headA},
		{"the repository's case does not matter",
			[]rollbackpr.Push{func() rollbackpr.Push { p := pushAB(releaseFile); p.Repo = "Acme/GitOps"; return p }()}, false, ""},
		{"two pushes in a row keep an untouched file",
			[]rollbackpr.Push{pushAB("README.md"), {Repo: "acme/gitops", Branch: "main", Before: headB, After: headC, Tree: "tree-cccc", Commits: 2, Changed: []string{"a", "b"}}}, true, headC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache()
			c.Put("acme/gitops", "main", releaseFile, snapshotAt(headA, releaseYAML))
			for _, p := range tt.pushes {
				c.Pushed(p)
			}
			got, ok := c.Get("acme/gitops", "main", releaseFile)
			if ok != tt.wantHit {
				t.Fatalf("hit = %v, want %v (snapshot %+v)", ok, tt.wantHit, got)
			}
			if !ok {
				return
			}
			if got.Commit != tt.wantHead || got.Tree != "tree-"+tt.wantHead[:4] || string(got.Content) != releaseYAML || got.BlobSHA != "blob-"+releaseYAML {
				t.Errorf("snapshot = %+v, want the release file at %s with its tree", got, tt.wantHead)
			}
		})
	}
}

func TestMemoryCacheBounds(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := rollbackpr.NewMemoryCache(2, 10*time.Minute, func() time.Time { return now })
	c.Put("acme/a", "main", "f", snapshotAt(headA, "a"))
	c.Put("acme/b", "main", "f", snapshotAt(headA, "b"))
	if _, ok := c.Get("acme/a", "main", "f"); !ok { // a is now the most recently used
		t.Fatal("acme/a missing")
	}
	c.Put("acme/c", "main", "f", snapshotAt(headA, "c"))
	if _, ok := c.Get("acme/b", "main", "f"); ok {
		t.Error("the least recently used branch was kept beyond the bound")
	}
	if _, ok := c.Get("acme/a", "main", "f"); !ok {
		t.Error("a recently used branch was evicted")
	}

	c.Put("acme/c", "main", "g", snapshotAt(headB, "g"))
	if _, ok := c.Get("acme/c", "main", "f"); ok {
		t.Error("a file read at an older head survived a read at a newer one")
	}

	now = now.Add(11 * time.Minute)
	if _, ok := c.Get("acme/c", "main", "g"); ok {
		t.Error("a branch nobody confirmed for longer than max age was trusted")
	}

	c.Put("acme/c", "main", "g", snapshotAt(headB, "g"))
	c.Forget("ACME/c", "main")
	if _, ok := c.Get("acme/c", "main", "g"); ok {
		t.Error("Forget left the branch")
	}
}

func TestMemoryCachePushConfirmsTheBranch(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := rollbackpr.NewMemoryCache(2, 10*time.Minute, func() time.Time { return now })
	c.Put("acme/gitops", "main", releaseFile, snapshotAt(headA, releaseYAML))
	now = now.Add(9 * time.Minute)
	c.Pushed(pushAB("README.md"))
	now = now.Add(9 * time.Minute)
	if _, ok := c.Get("acme/gitops", "main", releaseFile); !ok {
		t.Error("a push that continued the head did not renew the branch's age")
	}
}

func TestMemoryCacheCopiesContent(t *testing.T) {
	c := newCache()
	s := snapshotAt(headA, releaseYAML)
	c.Put("acme/gitops", "main", releaseFile, s)
	s.Content[0] = 'X'
	got, _ := c.Get("acme/gitops", "main", releaseFile)
	got.Content[1] = 'Y'
	again, _ := c.Get("acme/gitops", "main", releaseFile)
	if string(again.Content) != releaseYAML {
		t.Errorf("the cached file was changed through a caller's slice: %q", again.Content)
	}
}
