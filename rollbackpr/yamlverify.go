package rollbackpr

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// verifyEdit parses the edited text and checks that it has the same document as the
// original except for the edited scalars, which must read as planned. This is the guard
// that makes the byte splice safe: a scalar whose extent was misjudged, or a plain value
// that YAML reads differently in this spot, fails here instead of reaching a commit.
func verifyEdit(before *yaml.Node, out []byte, splices []splice) error {
	after, err := parseSingleDocument(out)
	if err != nil {
		return err
	}
	want := make(map[*yaml.Node]splice, len(splices))
	for _, sp := range splices {
		want[sp.node] = sp
		if sp.key != nil {
			want[sp.key] = sp
		}
	}
	return sameNode(before, after, want, "")
}

func sameNode(a, b *yaml.Node, edited map[*yaml.Node]splice, where string) error {
	if a.Kind != b.Kind || len(a.Content) != len(b.Content) {
		return fmt.Errorf("%s: the document's shape changed", describe(where))
	}
	sp, isEdited := edited[a]
	if isEdited && sp.node == a {
		if b.Value != sp.want.value || b.Tag != sp.want.tag {
			return fmt.Errorf("%s: would read %s %q, want %s %q", sp.path, b.Tag, b.Value, sp.want.tag, sp.want.value)
		}
		if a.Anchor != b.Anchor || a.HeadComment != b.HeadComment || a.FootComment != b.FootComment {
			return fmt.Errorf("%s: anchor or comments around the value changed", sp.path)
		}
	} else {
		if a.Value != b.Value || a.Tag != b.Tag || a.Style != b.Style || a.Anchor != b.Anchor {
			return fmt.Errorf("%s (line %d): value %q changed to %q", describe(where), a.Line, a.Value, b.Value)
		}
		if a.HeadComment != b.HeadComment || a.FootComment != b.FootComment {
			return fmt.Errorf("%s (line %d): a comment changed", describe(where), a.Line)
		}
	}
	// The line comment of an edited key/value pair is compared for the pair, below.
	if !(isEdited && sp.key != nil) && a.LineComment != b.LineComment {
		return fmt.Errorf("%s (line %d): a line comment changed", describe(where), a.Line)
	}
	for i := range a.Content {
		if err := sameNode(a.Content[i], b.Content[i], edited, childWhere(a, i, where)); err != nil {
			return err
		}
	}
	if a.Kind == yaml.MappingNode {
		return sameEditedLineComments(a, b, edited)
	}
	return nil
}

// sameEditedLineComments compares the line comments of an edited key/value pair
// together: filling an empty "key: # note" moves the comment from the key to the value.
func sameEditedLineComments(a, b *yaml.Node, edited map[*yaml.Node]splice) error {
	for i := 0; i+1 < len(a.Content); i += 2 {
		sp, ok := edited[a.Content[i+1]]
		if !ok {
			continue
		}
		before := a.Content[i].LineComment + a.Content[i+1].LineComment
		after := b.Content[i].LineComment + b.Content[i+1].LineComment
		if before != after {
			return fmt.Errorf("%s: its line comment changed from %q to %q", sp.path, before, after)
		}
	}
	return nil
}

func childWhere(parent *yaml.Node, i int, where string) string {
	switch parent.Kind {
	case yaml.MappingNode:
		if i%2 == 1 {
			return joinPath(where, parent.Content[i-1].Value)
		}
		return joinPath(where, parent.Content[i].Value) + " (key)"
	case yaml.SequenceNode:
		return fmt.Sprintf("%s[%d]", where, i)
	default:
		return where
	}
}

func joinPath(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}
