package rollbackpr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// splice replaces src[start:end] with text. want is what the re-parsed scalar must read.
type splice struct {
	path       string
	start, end int
	text       string
	node, key  *yaml.Node
	want       expected
}

type expected struct {
	value, tag string
}

// EditReleaseFile returns src with the scalar values named by changes (dotted path → new
// value, e.g. "image.digest" or "containers[0].image") replaced, and every other byte —
// comments, key order, quoting, indentation, blank lines, line endings — unchanged.
//
// It does not re-marshal the document: yaml.v3 finds each scalar's position and the new
// text is spliced into the original bytes, keeping the scalar's quoting style (plain
// values are double-quoted when plain text would read back as something else, such as a
// number). The result is parsed again and compared with the input, so an edit that would
// change anything but the named values is refused instead of written. A path the file
// does not have is an error wrapping ErrPathNotFound; keys are never invented. A path
// through an alias (*name) is refused, since the edit would land on the anchor; a scalar
// that carries an anchor (&name) keeps it, and its aliases follow the new value, as YAML
// says they must.
func EditReleaseFile(src []byte, changes map[string]string) ([]byte, error) {
	doc, err := parseSingleDocument(src)
	if err != nil {
		return nil, err
	}
	lines := newLineIndex(src)
	paths := make([]string, 0, len(changes))
	for p := range changes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	byNode := map[*yaml.Node]string{}
	splices := make([]splice, 0, len(paths))
	for _, p := range paths {
		sp, err := planEdit(src, lines, doc, p, changes[p])
		if err != nil {
			return nil, fmt.Errorf("edit release file: %w", err)
		}
		if other, dup := byNode[sp.node]; dup {
			return nil, fmt.Errorf("edit release file: paths %q and %q name the same value", other, p)
		}
		byNode[sp.node] = p
		splices = append(splices, sp)
	}
	out := applySplices(src, splices)
	if err := verifyEdit(doc, out, splices); err != nil {
		return nil, fmt.Errorf("edit release file: refusing an edit that would change more than the named values: %w", err)
	}
	return out, nil
}

// parseSingleDocument parses src and insists on exactly one YAML document: in a stream of
// several, a dotted path would be ambiguous.
func parseSingleDocument(src []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parse release file: %w", err)
		}
		docs = append(docs, &n)
	}
	switch len(docs) {
	case 0:
		return nil, fmt.Errorf("parse release file: it is empty")
	case 1:
		return docs[0], nil
	default:
		return nil, fmt.Errorf("parse release file: it holds %d YAML documents; want one", len(docs))
	}
}

func planEdit(src []byte, lines lineIndex, doc *yaml.Node, path, value string) (splice, error) {
	if !utf8.ValidString(value) {
		return splice{}, fmt.Errorf("path %q: new value is not valid UTF-8", path)
	}
	node, key, flow, err := lookup(doc, path)
	if err != nil {
		return splice{}, err
	}
	if node.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return splice{}, fmt.Errorf("path %q (line %d) is a block scalar (| or >); only single-line values can be edited", path, node.Line)
	}
	start, err := lines.offset(node.Line, node.Column)
	if err != nil {
		return splice{}, fmt.Errorf("path %q: %w", path, err)
	}
	start, end, err := scalarExtent(src, start, node)
	if err != nil {
		return splice{}, fmt.Errorf("path %q (line %d): %w", path, node.Line, err)
	}
	text, want := render(node, flow, value)
	if start == end && start > 0 && !isBlank(src[start-1]) {
		// An empty value ("key:" with nothing after it) needs a space before the new one.
		text = " " + text
	}
	return splice{path: path, start: start, end: end, text: text, node: node, key: key, want: want}, nil
}

// scalarExtent returns the byte range of the scalar's own text, starting at the node's
// position and skipping its anchor and tag, which stay as they are.
func scalarExtent(src []byte, start int, node *yaml.Node) (int, int, error) {
	start = skipProperties(src, start, node.Value != "")
	switch {
	case node.Style&yaml.DoubleQuotedStyle != 0:
		return quotedExtent(src, start, '"')
	case node.Style&yaml.SingleQuotedStyle != 0:
		return quotedExtent(src, start, '\'')
	case node.Value == "":
		return start, start, nil
	case bytes.HasPrefix(src[start:], []byte(node.Value)):
		// A single-line plain scalar's text is exactly its value.
		return start, start + len(node.Value), nil
	default:
		return 0, 0, fmt.Errorf("the value spans several lines; only single-line values can be edited")
	}
}

// skipProperties moves past "&anchor" and "!tag" tokens before a scalar. When the scalar
// has text, it may start on a later line, so line breaks and comments are skipped too;
// an empty scalar ends right after its properties.
func skipProperties(src []byte, i int, hasText bool) int {
	for i < len(src) && (src[i] == '&' || src[i] == '!') {
		for i < len(src) && !isBlank(src[i]) && !isBreak(src[i]) {
			i++
		}
		if !hasText {
			return i
		}
		for i < len(src) && (isBlank(src[i]) || isBreak(src[i]) || src[i] == '#') {
			if src[i] == '#' {
				for i < len(src) && !isBreak(src[i]) {
					i++
				}
				continue
			}
			i++
		}
	}
	return i
}

// quotedExtent finds the closing quote. In double quotes a backslash escapes the next
// byte; in single quotes the only escape is a doubled quote.
func quotedExtent(src []byte, start int, quote byte) (int, int, error) {
	if start >= len(src) || src[start] != quote {
		return 0, 0, fmt.Errorf("expected %c at byte %d", quote, start)
	}
	for i := start + 1; i < len(src); i++ {
		switch {
		case quote == '"' && src[i] == '\\':
			i++
		case src[i] == quote && quote == '\'' && i+1 < len(src) && src[i+1] == '\'':
			i++
		case src[i] == quote:
			return start, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("unterminated %c-quoted value", quote)
}

// applySplices applies non-overlapping splices (distinct scalars never overlap).
func applySplices(src []byte, splices []splice) []byte {
	sorted := append([]splice(nil), splices...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].start < sorted[j].start })
	var out bytes.Buffer
	out.Grow(len(src))
	last := 0
	for _, sp := range sorted {
		out.Write(src[last:sp.start])
		out.WriteString(sp.text)
		last = sp.end
	}
	out.Write(src[last:])
	return out.Bytes()
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' }

func isBreak(b byte) bool { return b == '\n' || b == '\r' }
