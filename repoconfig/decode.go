package repoconfig

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder walks yaml.v3 nodes instead of unmarshalling into structs because
// only nodes know where a value sits, and every problem must say where.
type decoder struct {
	problems []Problem
	visited  int
}

// maxVisits bounds the work one file can cause: aliases let a few lines make
// the walk exponential (a "billion laughs"), and validate runs on files
// anyone can send. Real configs visit a few hundred nodes.
const maxVisits = 100_000

// visit counts a node; false once the budget is spent, after one problem.
func (d *decoder) visit(n *yaml.Node) bool {
	d.visited++
	if d.visited == maxVisits+1 {
		d.problemf(n, "", "the file is too large or repeats anchors too often (more than %d values); stopped checking", maxVisits)
	}
	return d.visited <= maxVisits
}

// field is one key of a mapping with the path that names it.
type field struct {
	Key, Value *yaml.Node
	Name, Path string
}

func (d *decoder) problemf(n *yaml.Node, path, format string, args ...any) {
	p := Problem{Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	d.problems = append(d.problems, p)
}

// resolve follows aliases so an anchored block is checked like a written one.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!null":
		return "empty"
	case "!!str":
		return fmt.Sprintf("the string %q", n.Value)
	case "!!int", "!!float":
		return "the number " + n.Value
	case "!!bool":
		return n.Value
	}
	return fmt.Sprintf("%q", n.Value)
}

// entries returns the keys of a mapping whose keys are names the user picks
// (apps, environments, failure types), rejecting duplicates and non-string keys.
func (d *decoder) entries(n *yaml.Node, path string) ([]field, bool) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		if path == "" {
			d.problemf(n, path, "the file must be a mapping of keys (version: 1, apps: ...), not %s", kindName(n))
		} else {
			d.problemf(n, path, "must be a mapping, not %s", kindName(n))
		}
		return nil, false
	}
	var out []field
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if !d.visit(k) {
			return out, false
		}
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || k.Value == "" {
			d.problemf(k, path, "key %s must be a non-empty name", kindName(k))
			continue
		}
		if seen[k.Value] {
			d.problemf(k, join(path, k.Value), "%q is defined twice", k.Value)
			continue
		}
		seen[k.Value] = true
		out = append(out, field{Key: k, Value: v, Name: k.Value, Path: join(path, k.Value)})
	}
	return out, true
}

// fields returns the keys of a mapping whose keys are fixed by the schema;
// an unknown key is a problem that lists the allowed ones.
func (d *decoder) fields(n *yaml.Node, path string, allowed ...string) (map[string]field, bool) {
	all, ok := d.entries(n, path)
	if !ok {
		return nil, false
	}
	out := make(map[string]field, len(all))
	for _, f := range all {
		if !contains(allowed, f.Name) {
			d.problemf(f.Key, f.Path, "%s", unknownKeyMessage(f.Name, allowed))
			continue
		}
		out[f.Name] = f
	}
	return out, true
}

// require reports each missing key at the mapping it belongs in.
func (d *decoder) require(n *yaml.Node, path string, got map[string]field, keys ...string) {
	for _, k := range keys {
		if _, ok := got[k]; !ok {
			d.problemf(resolve(n), path, "missing required key %s", k)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (d *decoder) str(f field) (string, bool) {
	n := f.Value
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.problemf(n, f.Path, "must be a string, not %s", kindName(n))
		return "", false
	}
	if n.Value == "" {
		d.problemf(n, f.Path, "must not be empty")
		return "", false
	}
	return n.Value, true
}

// match reads a string that must match re; what names the expected shape.
func (d *decoder) match(f field, re *regexp.Regexp, what string) (string, bool) {
	s, ok := d.str(f)
	if !ok {
		return "", false
	}
	if !re.MatchString(s) {
		d.problemf(f.Value, f.Path, "%q is not %s", s, what)
		return "", false
	}
	return s, true
}

func (d *decoder) enum(f field, values ...string) (string, bool) {
	s, ok := d.str(f)
	if !ok {
		return "", false
	}
	if !contains(values, s) {
		d.problemf(f.Value, f.Path, "%q is not one of %s", s, strings.Join(values, ", "))
		return "", false
	}
	return s, true
}

func (d *decoder) integer(f field, minimum, maximum int) (int, bool) {
	n := f.Value
	v, ok := wholeNumber(n)
	if !ok {
		d.problemf(n, f.Path, "must be a whole number, not %s", kindName(n))
		return 0, false
	}
	if v < minimum || v > maximum {
		d.problemf(n, f.Path, "%d is out of range: must be from %d to %d", v, minimum, maximum)
		return 0, false
	}
	return v, true
}

// wholeNumber accepts 3 and 3.0 alike, as JSON Schema's "integer" does.
func wholeNumber(n *yaml.Node) (int, bool) {
	var f float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&f) != nil {
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, false
	}
	return int(f), true
}

func (d *decoder) number(f field, minimum float64) (float64, bool) {
	n := f.Value
	var v float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil ||
		math.IsNaN(v) || math.IsInf(v, 0) {
		d.problemf(n, f.Path, "must be a number, not %s", kindName(n))
		return 0, false
	}
	if v < minimum {
		d.problemf(n, f.Path, "%s is too small: must be at least %g", n.Value, minimum)
		return 0, false
	}
	return v, true
}

func (d *decoder) boolean(f field) (bool, bool) {
	n := f.Value
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		d.problemf(n, f.Path, "must be true or false, not %s", kindName(n))
		return false, false
	}
	return v, true
}

// duration accepts Go duration strings without a sign ("10s", "5m", "1h30m");
// positive additionally rejects zero, for settings where zero means nothing.
func (d *decoder) duration(f field, positive bool) (time.Duration, bool) {
	const what = "a duration like 10s, 5m or 1h30m"
	if n := f.Value; n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.problemf(n, f.Path, "must be %s, not %s", what, kindName(n))
		return 0, false
	}
	s, ok := d.match(f, durationPattern, what)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.problemf(f.Value, f.Path, "%q is not a duration: %v", s, err)
		return 0, false
	}
	if positive && v <= 0 {
		d.problemf(f.Value, f.Path, "must be longer than 0s")
		return 0, false
	}
	return v, true
}

// list reads a sequence and calls each for every item with its indexed path.
func (d *decoder) list(f field, each func(field)) bool {
	n := f.Value
	if n.Kind != yaml.SequenceNode {
		d.problemf(n, f.Path, "must be a list, not %s", kindName(n))
		return false
	}
	for i, item := range n.Content {
		if !d.visit(item) {
			return false
		}
		each(field{Value: resolve(item), Name: f.Name, Path: fmt.Sprintf("%s[%d]", f.Path, i)})
	}
	return true
}

// strings reads a list of strings, each checked by check (nil: any non-empty string).
func (d *decoder) strings(f field, check func(field) (string, bool)) []string {
	if check == nil {
		check = d.str
	}
	out := []string{}
	d.list(f, func(item field) {
		if s, ok := check(item); ok {
			out = append(out, s)
		}
	})
	return out
}

// joinOr lists values as "a, b or c".
func joinOr(values []string) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// formatDuration prints 5m rather than 5m0s, as users write durations.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
