package githubtest

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"
)

// The fake keeps git objects as git does — blobs, one-level trees, commits, refs — and
// names them with git's own SHA-1 object ids, so a sha the App computed or read from a
// webhook payload means the same thing here as in a real repository.

// Signature is a commit's author or committer.
type Signature struct {
	Name, Email string
	Date        time.Time
}

// Commit is a git commit in the fake.
type Commit struct {
	SHA       string
	Tree      string
	Message   string
	Parents   []string
	Author    Signature
	Committer Signature
}

// TreeEntry is one entry of a git tree: Path is a name within that tree, or a full path
// in a flattened tree.
type TreeEntry struct {
	Path string
	Mode string // 100644, 100755, 040000, 160000, 120000
	Type string // blob, tree, commit
	SHA  string
}

type gitObjects struct {
	blobs   map[string][]byte
	trees   map[string][]TreeEntry
	commits map[string]*Commit
	refs    map[string]string // full ref name (refs/heads/main) -> commit sha
}

func newGitObjects() *gitObjects {
	return &gitObjects{
		blobs:   map[string][]byte{},
		trees:   map[string][]TreeEntry{},
		commits: map[string]*Commit{},
		refs:    map[string]string{},
	}
}

func gitHash(kind string, content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", kind, len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

func (g *gitObjects) putBlob(content []byte) string {
	sha := gitHash("blob", content)
	g.blobs[sha] = append([]byte(nil), content...)
	return sha
}

// putTree stores one level of a tree, entries named within it.
func (g *gitObjects) putTree(entries []TreeEntry) (string, error) {
	sorted := append([]TreeEntry(nil), entries...)
	// git orders a tree's entries by name, comparing a subtree as if its name ended in "/".
	key := func(e TreeEntry) string {
		if e.Type == "tree" {
			return e.Path + "/"
		}
		return e.Path
	}
	sort.Slice(sorted, func(i, j int) bool { return key(sorted[i]) < key(sorted[j]) })
	var buf bytes.Buffer
	for _, e := range sorted {
		raw, err := hex.DecodeString(e.SHA)
		if err != nil || len(raw) != sha1.Size {
			return "", fmt.Errorf("tree entry %q: sha %q is not a 40-hex object id", e.Path, e.SHA)
		}
		fmt.Fprintf(&buf, "%s %s\x00", strings.TrimPrefix(e.Mode, "0"), e.Path)
		buf.Write(raw)
	}
	sha := gitHash("tree", buf.Bytes())
	g.trees[sha] = sorted
	return sha, nil
}

func (g *gitObjects) putCommit(c Commit) string {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "tree %s\n", c.Tree)
	for _, p := range c.Parents {
		fmt.Fprintf(&buf, "parent %s\n", p)
	}
	fmt.Fprintf(&buf, "author %s\ncommitter %s\n\n%s", gitSignature(c.Author), gitSignature(c.Committer), c.Message)
	c.SHA = gitHash("commit", buf.Bytes())
	c.Parents = append([]string(nil), c.Parents...)
	g.commits[c.SHA] = &c
	return c.SHA
}

func gitSignature(s Signature) string {
	return fmt.Sprintf("%s <%s> %d +0000", s.Name, s.Email, s.Date.Unix())
}

// flatten lists every non-tree entry under a tree with its full path.
func (g *gitObjects) flatten(treeSHA string) (map[string]TreeEntry, error) {
	flat := map[string]TreeEntry{}
	if err := g.flattenInto(flat, treeSHA, ""); err != nil {
		return nil, err
	}
	return flat, nil
}

func (g *gitObjects) flattenInto(flat map[string]TreeEntry, treeSHA, prefix string) error {
	entries, ok := g.trees[treeSHA]
	if !ok {
		return fmt.Errorf("tree %s does not exist", treeSHA)
	}
	for _, e := range entries {
		if e.Type == "tree" {
			if err := g.flattenInto(flat, e.SHA, prefix+e.Path+"/"); err != nil {
				return err
			}
			continue
		}
		e.Path = prefix + e.Path
		flat[e.Path] = e
	}
	return nil
}

// writeFlat stores the trees for a flattened tree and returns the root tree's sha.
func (g *gitObjects) writeFlat(flat map[string]TreeEntry) (string, error) {
	here := map[string]TreeEntry{}
	below := map[string]map[string]TreeEntry{}
	for path, e := range flat {
		dir, rest, nested := strings.Cut(path, "/")
		if !nested {
			e.Path = path
			here[path] = e
			continue
		}
		if below[dir] == nil {
			below[dir] = map[string]TreeEntry{}
		}
		below[dir][rest] = e
	}
	entries := make([]TreeEntry, 0, len(here)+len(below))
	for _, e := range here {
		entries = append(entries, e)
	}
	for dir, sub := range below {
		sha, err := g.writeFlat(sub)
		if err != nil {
			return "", err
		}
		entries = append(entries, TreeEntry{Path: dir, Mode: "040000", Type: "tree", SHA: sha})
	}
	return g.putTree(entries)
}

// resolve turns a branch, tag, full ref or commit sha into a commit sha.
func (g *gitObjects) resolve(ref string) (string, bool) {
	for _, name := range []string{ref, "refs/" + ref, "refs/heads/" + ref, "refs/tags/" + ref} {
		if sha, ok := g.refs[name]; ok {
			return sha, true
		}
	}
	if _, ok := g.commits[ref]; ok {
		return ref, true
	}
	return "", false
}

// entryAt finds a path at a commit: a blob entry, or a tree entry for a directory.
func (g *gitObjects) entryAt(commitSHA, path string) (TreeEntry, bool) {
	c, ok := g.commits[commitSHA]
	if !ok {
		return TreeEntry{}, false
	}
	current := TreeEntry{Mode: "040000", Type: "tree", SHA: c.Tree}
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		if name == "" {
			continue
		}
		if current.Type != "tree" {
			return TreeEntry{}, false
		}
		found := false
		for _, e := range g.trees[current.SHA] {
			if e.Path == name {
				current, found = e, true
				break
			}
		}
		if !found {
			return TreeEntry{}, false
		}
	}
	return current, true
}

// isAncestor reports whether ancestor is reachable from descendant through parents.
func (g *gitObjects) isAncestor(ancestor, descendant string) bool {
	seen := map[string]bool{}
	queue := []string{descendant}
	for len(queue) > 0 {
		sha := queue[0]
		queue = queue[1:]
		if sha == ancestor {
			return true
		}
		if seen[sha] {
			continue
		}
		seen[sha] = true
		if c, ok := g.commits[sha]; ok {
			queue = append(queue, c.Parents...)
		}
	}
	return false
}

// fullRef names a ref as refs/...: "main" and "heads/main" are refs/heads/main.
func fullRef(ref string) string {
	switch {
	case strings.HasPrefix(ref, "refs/"):
		return ref
	case strings.HasPrefix(ref, "heads/"), strings.HasPrefix(ref, "tags/"):
		return "refs/" + ref
	}
	return "refs/heads/" + ref
}
