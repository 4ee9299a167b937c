package rollbackpr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrPathNotFound is wrapped by EditReleaseFile when a dotted path names a key or an index
// the release file does not have. The edit never invents keys: a release file that lacks
// one is a configuration error the user must see.
var ErrPathNotFound = errors.New("path not found in release file")

// step is one hop of a dotted path: a mapping key, or a sequence index when index >= 0.
type step struct {
	key   string
	index int
}

// parsePath splits "a.b[0].c" into steps. Keys are taken literally up to the next "." or
// "["; a path may start with an index ("[0].name") when the document is a sequence.
func parsePath(path string) ([]step, error) {
	if path == "" {
		return nil, fmt.Errorf("path is empty")
	}
	var steps []step
	for i, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key == "" && !(i == 0 && strings.HasPrefix(part, "[")) {
			return nil, fmt.Errorf("path %q: empty key in segment %d", path, i+1)
		}
		if key != "" {
			steps = append(steps, step{key: key, index: -1})
		}
		if !strings.Contains(part, "[") {
			continue
		}
		for _, idx := range strings.Split("["+rest, "[")[1:] {
			num, ok := strings.CutSuffix(idx, "]")
			n, err := strconv.Atoi(num)
			if !ok || err != nil || n < 0 {
				return nil, fmt.Errorf("path %q: bad index [%s in segment %d; want [N] with N >= 0", path, idx, i+1)
			}
			steps = append(steps, step{index: n})
		}
	}
	return steps, nil
}

// lookup walks the document to the scalar the path names. It returns the scalar, the key
// node that names it (nil for a sequence item) and whether the scalar sits in a flow
// collection, where a plain value must avoid ",[]{}".
func lookup(doc *yaml.Node, path string) (value, key *yaml.Node, flow bool, err error) {
	steps, err := parsePath(path)
	if err != nil {
		return nil, nil, false, err
	}
	node := doc
	if node.Kind == yaml.DocumentNode && len(node.Content) == 1 {
		node = node.Content[0]
	}
	where := ""
	for _, s := range steps {
		if node.Kind == yaml.AliasNode {
			return nil, nil, false, fmt.Errorf("path %q: %s is an alias of &%s; edit the path of the anchor itself", path, describe(where), node.Value)
		}
		parent := node
		if s.index >= 0 {
			node, err = seqItem(node, s.index, path, where)
			where += "[" + strconv.Itoa(s.index) + "]"
			key = nil
		} else {
			key, node, err = mapValue(node, s.key, path, where)
			where = strings.TrimPrefix(where+"."+s.key, ".")
		}
		if err != nil {
			return nil, nil, false, err
		}
		flow = parent.Style&yaml.FlowStyle != 0
	}
	switch node.Kind {
	case yaml.ScalarNode:
		return node, key, flow, nil
	case yaml.AliasNode:
		return nil, nil, false, fmt.Errorf("path %q is an alias of &%s; edit the path of the anchor itself", path, node.Value)
	default:
		return nil, nil, false, fmt.Errorf("path %q names a %s (line %d), not a single value", path, kindName(node.Kind), node.Line)
	}
}

func seqItem(node *yaml.Node, index int, path, where string) (*yaml.Node, error) {
	if node.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("path %q: %s is a %s (line %d), not a list", path, describe(where), kindName(node.Kind), node.Line)
	}
	if index >= len(node.Content) {
		return nil, fmt.Errorf("path %q: %s has %d items, no [%d]: %w", path, describe(where), len(node.Content), index, ErrPathNotFound)
	}
	return node.Content[index], nil
}

func mapValue(node *yaml.Node, key, path, where string) (*yaml.Node, *yaml.Node, error) {
	if node.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("path %q: %s is a %s (line %d), not a mapping", path, describe(where), kindName(node.Kind), node.Line)
	}
	merged := false
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i]
		if k.Kind == yaml.ScalarNode && k.Value == key {
			return k, node.Content[i+1], nil
		}
		merged = merged || (k.Tag == "!!merge" || k.Value == "<<")
	}
	if merged {
		return nil, nil, fmt.Errorf("path %q: %s has no key %q of its own (it may come from a << merge; edit the anchor's path): %w", path, describe(where), key, ErrPathNotFound)
	}
	return nil, nil, fmt.Errorf("path %q: %s has no key %q: %w", path, describe(where), key, ErrPathNotFound)
}

func describe(where string) string {
	if where == "" {
		return "the document"
	}
	return where
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "value"
	case yaml.AliasNode:
		return "alias"
	default:
		return "document"
	}
}
