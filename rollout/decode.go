package rollout

import (
	"fmt"
	suggestion "github.com/ripcord/ripcord/internal/suggest"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// decoder walks a yaml.Node by hand instead of using yaml's reflection so
// that every unknown key and every bad value becomes a Problem with its own
// line and column, and one run reports all of them rather than the first.
type decoder struct {
	problems []Problem
	at       positions
}

func newDecoder() *decoder { return &decoder{at: positions{}} }

// field decodes the value of one known key; path is the key's full path.
type field func(v *yaml.Node, path string)

type pair struct{ key, value *yaml.Node }

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.problems = append(d.problems, Problem{
		Path: path, Line: n.Line, Column: n.Column, Message: fmt.Sprintf(format, args...),
	})
}

// resolve follows aliases (*anchor) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "a document"
}

// fields decodes the mapping n strictly: a key that is not in known is a
// Problem that names the key and the keys that would be right. A key given
// an empty value (`bake:`) counts as not given, as YAML users expect.
func (d *decoder) fields(n *yaml.Node, path, what string, known map[string]field) {
	n = resolve(n)
	if !d.at.has(path) {
		d.at[path] = pos{n.Line, n.Column}
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "%s must be a mapping, not %s", what, kindName(n))
		return
	}
	for _, p := range d.pairs(n, path) {
		key := p.key.Value
		kpath := joinPath(path, key)
		decode, ok := known[key]
		if !ok {
			d.fail(p.key, kpath, "unknown key %q in %s: %s", key, what, suggest(key, known))
			continue
		}
		v := resolve(p.value)
		if isNull(v) {
			continue
		}
		d.at[kpath] = valuePos(p.key, v)
		decode(v, kpath)
	}
}

// valuePos is where a problem about a value should point: the value itself,
// except for a block mapping or list, which starts on the line after its key
// and is better named by the key.
func valuePos(key, v *yaml.Node) pos {
	if (v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode) && v.Style&yaml.FlowStyle == 0 {
		return pos{key.Line, key.Column}
	}
	return pos{v.Line, v.Column}
}

// pairs lists the key/value pairs of a mapping with YAML merge keys (<<)
// expanded: keys written in the mapping win over merged ones, and among
// merged mappings the first listed wins.
func (d *decoder) pairs(n *yaml.Node, path string) []pair {
	var own, merged []pair
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "keys must be plain names, not %s", kindName(k))
			continue
		}
		if k.Tag == "!!merge" {
			merged = append(merged, d.mergeSources(resolve(v), path)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(k, joinPath(path, k.Value), "key %q is given twice (first on line %d); keep one", k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		own = append(own, pair{k, v})
	}
	for _, p := range merged {
		if _, dup := seen[p.key.Value]; !dup {
			seen[p.key.Value] = p.key
			own = append(own, p)
		}
	}
	return own
}

func (d *decoder) mergeSources(v *yaml.Node, path string) []pair {
	switch v.Kind {
	case yaml.MappingNode:
		return d.pairs(v, path)
	case yaml.SequenceNode:
		var out []pair
		for _, m := range v.Content {
			out = append(out, d.mergeSources(resolve(m), path)...)
		}
		return out
	}
	d.fail(v, path, "<< must merge a mapping or a list of mappings, not %s", kindName(v))
	return nil
}

// suggest tells the user what the right key would be: the snake_case
// spelling of a camelCase key (the seed's spelling), a near miss, or the list.
func suggest(key string, known map[string]field) string {
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	slices.Sort(names)
	if s := snakeCase(key); s != key {
		if _, ok := known[s]; ok {
			return fmt.Sprintf("keys are snake_case, write %s", s)
		}
	}
	best, bestDist := "", 3
	for _, name := range names {
		if dist := suggestion.Distance(strings.ToLower(key), name); dist < bestDist {
			best, bestDist = name, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %s?", best)
	}
	return "valid keys are " + strings.Join(names, ", ")
}

func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// list decodes a sequence, calling each with every item and its path.
func (d *decoder) list(v *yaml.Node, path, what string, each func(item *yaml.Node, path string)) {
	if v.Kind != yaml.SequenceNode {
		d.fail(v, path, "%s must be a list, not %s", what, kindName(v))
		return
	}
	for i, item := range v.Content {
		item = resolve(item)
		ipath := indexPath(path, i)
		d.at[ipath] = pos{item.Line, item.Column}
		each(item, ipath)
	}
}

func (d *decoder) str(v *yaml.Node, path string) string {
	if isNull(v) {
		d.fail(v, path, "%s is empty; give it a value or remove it", lastKey(path))
		return ""
	}
	if v.Kind != yaml.ScalarNode {
		d.fail(v, path, "%s must be a single value, not %s", lastKey(path), kindName(v))
		return ""
	}
	return v.Value
}

func (d *decoder) strs(v *yaml.Node, path string) []string {
	var out []string
	d.list(v, path, lastKey(path), func(item *yaml.Node, ipath string) {
		out = append(out, d.str(item, ipath))
	})
	return out
}

// atLeast decodes a whole number that must be at least min. The check lives
// here, not in validation, because 0 in the struct means "not given".
func (d *decoder) atLeast(v *yaml.Node, path string, lowest int) int {
	var n int
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil {
		d.fail(v, path, "%s must be a whole number, not %s", lastKey(path), kindName(v))
		return 0
	}
	if n < lowest {
		d.fail(v, path, "%s must be at least %d, not %d", lastKey(path), lowest, n)
		return 0
	}
	return n
}

func (d *decoder) float(v *yaml.Node, path string) *float64 {
	var f float64
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || v.Decode(&f) != nil ||
		math.IsNaN(f) || math.IsInf(f, 0) {
		d.fail(v, path, "%s must be a number like 0.01, not %s", lastKey(path), kindName(v))
		return nil
	}
	return &f
}

func (d *decoder) duration(v *yaml.Node, path string) time.Duration {
	if v.Kind == yaml.ScalarNode {
		if dur, err := time.ParseDuration(v.Value); err == nil {
			return dur
		}
	}
	d.fail(v, path, "%s must be a duration like 15m or 30s, not %s", lastKey(path), kindName(v))
	return 0
}

func (d *decoder) quantity(v *yaml.Node, path string) Quantity {
	if v.Kind != yaml.ScalarNode {
		d.fail(v, path, "%s must be a number or a percentage like 25%%, not %s", lastKey(path), kindName(v))
		return Quantity{}
	}
	q, err := ParseQuantity(v.Value)
	if err != nil {
		name := lastKey(path)
		if name == "" {
			name = "quantity"
		}
		d.fail(v, path, "%s %v", name, err)
	}
	return q
}

// lastKey is the key a path ends with, for messages: waves[1].bake → bake.
func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return path
}
