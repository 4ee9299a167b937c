package rollbackpr

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

const strTag = "!!str"

// render writes value in the scalar's own style and says what the re-parsed scalar must
// read. A plain value stays plain only when plain text reads back as the same string with
// a type that fits (a string, or the type the old value had: replicas: 3 may become 4);
// otherwise it is double-quoted, because "12345678" as a plain git revision would turn
// into a number. Single quotes cannot hold control characters, so those fall back to
// double quotes too.
func render(node *yaml.Node, flow bool, value string) (string, expected) {
	explicitTag := node.Style&yaml.TaggedStyle != 0
	keep := func(tag string) expected {
		if explicitTag {
			return expected{value: value, tag: node.Tag}
		}
		return expected{value: value, tag: tag}
	}
	switch {
	case node.Style&yaml.DoubleQuotedStyle != 0:
		return doubleQuote(value), keep(strTag)
	case node.Style&yaml.SingleQuotedStyle != 0:
		if printable(value) {
			return "'" + strings.ReplaceAll(value, "'", "''") + "'", keep(strTag)
		}
		return doubleQuote(value), keep(strTag)
	}
	if explicitTag && plainSafe(value, flow) {
		return value, keep(node.Tag)
	}
	if tag, ok := plainTag(value, flow); ok && (tag == strTag || tag == node.Tag) {
		return value, keep(tag)
	}
	return doubleQuote(value), keep(strTag)
}

// plainTag reports the type a plain scalar with this text resolves to, and whether the
// text can be written plain at all.
func plainTag(value string, flow bool) (string, bool) {
	if !plainSafe(value, flow) {
		return "", false
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(value), &n); err != nil || len(n.Content) != 1 {
		return "", false
	}
	s := n.Content[0]
	if s.Kind != yaml.ScalarNode || s.Value != value || s.Style != 0 {
		return "", false
	}
	return s.Tag, true
}

// plainSafe is deliberately stricter than YAML: a value it refuses is quoted, which is
// always correct, only less pretty.
func plainSafe(value string, flow bool) bool {
	if value == "" || !printable(value) {
		return false
	}
	if strings.ContainsAny(value[:1], "-?:,[]{}#&*!|>'\"%@` \t") {
		return false
	}
	last := value[len(value)-1]
	if last == ' ' || last == '\t' || last == ':' {
		return false
	}
	if strings.Contains(value, ": ") || strings.Contains(value, " #") || strings.Contains(value, ":\t") || strings.Contains(value, "\t#") {
		return false
	}
	return !flow || !strings.ContainsAny(value, ",[]{}")
}

// printable reports whether value has no character that YAML must escape.
func printable(value string) bool {
	for _, r := range value {
		if needsEscape(r) {
			return false
		}
	}
	return true
}

func needsEscape(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20 || r == 0x7F:
		return true
	case r >= 0x80 && r < 0xA0:
		return true
	case r == 0x2028 || r == 0x2029 || r == 0xFEFF || r == 0xFFFE || r == 0xFFFF:
		return true
	}
	return false
}

// doubleQuote writes value as a YAML double-quoted scalar on one line.
func doubleQuote(value string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range value {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			switch {
			case !needsEscape(r):
				b.WriteRune(r)
			case r <= 0xFF:
				fmt.Fprintf(&b, `\x%02X`, r)
			default:
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
