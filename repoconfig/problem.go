package repoconfig

import (
	"fmt"
	"sort"
)

// Problem is one thing wrong with a config file, at the spot that is wrong.
type Problem struct {
	// Path is the dotted key path, e.g. "apps.checkout.environments.prod.rollback.mode";
	// empty for problems with the whole file (a YAML syntax error).
	Path string
	// Line and Column are 1-based; 0 when the YAML parser did not say.
	Line, Column int
	Message      string
}

// Format renders the problem the way compilers do, `file:line:column: path: message`,
// so editors and GitHub problem matchers can jump to it.
func (p Problem) Format(file string) string {
	loc := file
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", file, p.Line, max(p.Column, 1))
	}
	if p.Path == "" {
		return loc + ": " + p.Message
	}
	return loc + ": " + p.Path + ": " + p.Message
}

// Error lets a Problem travel as an error; it is Format without a file name.
func (p Problem) Error() string {
	if p.Line == 0 {
		return p.Format("")[2:]
	}
	return p.Format("")[1:]
}

// sortProblems orders problems as they appear in the file, so a reader fixes
// them top to bottom; cross-key checks found late still land at their line.
func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Line != ps[j].Line {
			return ps[i].Line < ps[j].Line
		}
		return ps[i].Column < ps[j].Column
	})
}
