package gates

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// Release is what a release file pins, read at the configured fields.
type Release struct {
	Image     string
	Digest    string
	ReleaseID string
}

// ReadRelease reads the configured fields of a release file. The digest may
// sit in its own field or in the image ("repo@sha256:…").
func ReadRelease(content []byte, f repoconfig.Fields) (Release, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil {
		return Release{}, fmt.Errorf("release file is not YAML: %w", err)
	}
	var r Release
	for _, x := range []struct {
		path string
		dst  *string
	}{{f.Image, &r.Image}, {f.Digest, &r.Digest}, {f.ReleaseID, &r.ReleaseID}} {
		if x.path == "" {
			continue
		}
		n := Lookup(&doc, x.path)
		if n == nil {
			return Release{}, fmt.Errorf("release file has no %s (the field rollback.fields names)", x.path)
		}
		if n.Kind != yaml.ScalarNode {
			return Release{}, fmt.Errorf("release file %s at line %d is not a string", x.path, n.Line)
		}
		*x.dst = strings.TrimSpace(n.Value)
	}
	if d := records.ParseImage(r.Image).Digest; r.Digest == "" && d != "" {
		r.Digest = d
	}
	return r, nil
}

// ChangesRelease reports whether head pins another release than base at the
// configured fields: a PR that only reformats the file or edits other keys
// is not a release. A base without the file (a new environment) counts as
// a change.
func ChangesRelease(base, head []byte, f repoconfig.Fields) bool {
	if base == nil {
		return head != nil
	}
	if bytes.Equal(base, head) {
		return false
	}
	b, errB := ReadRelease(base, f)
	h, errH := ReadRelease(head, f)
	if errB != nil || errH != nil {
		// Cannot tell: evaluate, so the values gate reports what is wrong.
		return true
	}
	return b != h
}

// Lookup finds a dotted path ("image.digest") in a YAML document.
func Lookup(doc *yaml.Node, path string) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, key := range strings.Split(path, ".") {
		n = child(n, key)
		if n == nil {
			return nil
		}
	}
	return n
}

func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
