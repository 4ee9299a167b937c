package rollout

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a rollout config or with the plan it
// produces, located where the user can fix it. Line and Column are 1-based
// and point at the offending key or value; they are 0 when the value did not
// come from YAML (a Spec built in Go).
type Problem struct {
	Path    string // e.g. rollout.waves[1].select
	Line    int
	Column  int
	Message string
}

// Error formats the problem the way compilers do, so editors can jump to it.
func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%d:%d: %s: %s", p.Line, p.Column, p.Path, p.Message)
	}
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Problems lets a list of problems travel as one error, for instance out of
// yaml.Unmarshal through Spec.UnmarshalYAML; errors.As recovers the list.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// pos is where a YAML node starts.
type pos struct{ line, column int }

// positions maps the path of every key and value read from YAML to where it
// was written, so rules checked after decoding can still point at the line.
type positions map[string]pos

// find returns the position of path or, when that key was never written (a
// required key that is missing), of its nearest written ancestor.
func (ps positions) find(path string) pos {
	for path != "" {
		if p, ok := ps[path]; ok {
			return p
		}
		cut := strings.LastIndexAny(path, ".[")
		if cut < 0 {
			break
		}
		path = path[:cut]
	}
	return pos{}
}

// has reports whether path was written in the YAML.
func (ps positions) has(path string) bool {
	_, ok := ps[path]
	return ok
}

func (ps positions) problem(path, format string, args ...any) Problem {
	at := ps.find(path)
	return Problem{Path: path, Line: at.line, Column: at.column, Message: fmt.Sprintf(format, args...)}
}

// joinPath appends a key to a dotted path.
func joinPath(parent, key string) string {
	switch {
	case key == "":
		return parent
	case parent == "":
		return key
	}
	return parent + "." + key
}

// indexPath appends a list index to a path.
func indexPath(parent string, i int) string {
	return fmt.Sprintf("%s[%d]", parent, i)
}
