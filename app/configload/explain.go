package configload

import (
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/repoconfig"
)

// Explain says, in one clause for a person who asked ripcord to act on
// repository (a click, a comment, an API call), why the config it needs
// does not load and what to do: which repository has no file, or which
// file is wrong, at which line, and how. Err is for logs and other callers;
// its wording repeats itself when put in a sentence. Explain of a valid
// config is "".
func (r Result) Explain(repository string) string {
	if r.Valid() {
		return ""
	}
	if !r.Found {
		return fmt.Sprintf("%v: add one to %s that configures the app's environments (`ripcord validate` checks it before you push)",
			r.missing(), r.Source.Repository)
	}
	file := fmt.Sprintf("%s of %s", r.Source.Path, r.Source.Repository)
	if r.Source.Fallback {
		file += fmt.Sprintf(" (the organisation's config, which %s uses as it has none)", repository)
	}
	if r.Source.Ref != "" {
		file += " at " + r.Source.Ref
	}
	if len(r.Problems) == 0 {
		return file + " does not load: fix it, then try again"
	}
	p := r.Problems[0]
	at := ""
	if p.Line > 0 {
		at = fmt.Sprintf(" at line %d", p.Line)
	}
	more := ""
	if n := len(r.Problems) - 1; n > 0 {
		more = fmt.Sprintf(" (and %d more %s)", n, map[bool]string{true: "problem", false: "problems"}[n == 1])
	}
	if p.Path == "" {
		// A problem with the whole file: its YAML does not parse.
		return fmt.Sprintf("%s is not valid YAML%s (%s)%s: fix it, then try again",
			file, at, strings.TrimPrefix(p.Message, "invalid YAML: "), more)
	}
	return fmt.Sprintf("%s is not valid%s, %s: %s%s: fix it (`ripcord validate` lists every problem), then try again",
		file, at, p.Path, p.Message, more)
}

// Field is what an API refusal of r names as its field, for a caller to
// fix: the key of the first problem; for a problem with the whole file (a
// YAML syntax error) the file and its line (.github/ripcord.yml:12); the
// file itself when it is missing or has no line. "" for a valid config.
func (r Result) Field() string {
	switch {
	case r.Valid():
		return ""
	case !r.Found || len(r.Problems) == 0:
		return repoconfig.Path
	}
	p := r.Problems[0]
	switch {
	case p.Path != "":
		return p.Path
	case p.Line > 0:
		return fmt.Sprintf("%s:%d", r.Source.Path, p.Line)
	}
	return r.Source.Path
}
