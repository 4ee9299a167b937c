package repoconfig

import (
	"fmt"
	"regexp"
	"strings"
)

// The patterns below are the same ones schema/ripcord.schema.json uses, so
// the Go check and the JSON Schema agree on what a well-formed value is.
var (
	durationPattern      = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)
	workflowFilePattern  = regexp.MustCompile(`^[^\s]+\.ya?ml$`)
	repositoryPattern    = regexp.MustCompile(`^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$`)
	relativePathPattern  = regexp.MustCompile(`^(?:[^/.][^/]*|\.[^/.][^/]*)(?:/(?:[^/.][^/]*|\.[^/.][^/]*))*$`)
	dottedPathPattern    = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	dnsLabelPattern      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	dnsSubdomainPattern  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	failureTypePattern   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	vulnerabilityPattern = regexp.MustCompile(`^(CVE-[0-9]{4}-[0-9]{4,}|GHSA-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4})$`)
	httpURLPattern       = regexp.MustCompile(`^https?://[^\s/]+(/\S*)?$`)
	httpsURLPattern      = regexp.MustCompile(`^https://[^\s/]+(/\S*)?$`)
)

// maxSubdomainLength is Kubernetes' limit for a Deployment name.
const maxSubdomainLength = 253

// Glob is a compiled name pattern as used for job names and branches:
// `*` matches any run of characters, slashes included (reusable-workflow
// jobs are named "caller / callee"), `?` one character, `[abc]`, `[a-z]` and
// `[!abc]` one character of a set. Matching ignores case because job names
// are display names people capitalise freely, and a "Build" job that failed
// to match "build*" would turn a build failure into a rollback candidate.
type Glob struct {
	pattern string
	re      *regexp.Regexp
}

// CompileGlob checks a glob and prepares it for matching.
func CompileGlob(pattern string) (*Glob, error) { return compileGlob(pattern, true) }

// CompileRefGlob is CompileGlob for git refs, which are matched with regard
// to case: git tells refs/heads/Main from refs/heads/main, and a rule that
// names one branch must not let a branch spelled another way through.
func CompileRefGlob(pattern string) (*Glob, error) { return compileGlob(pattern, false) }

func compileGlob(pattern string, foldCase bool) (*Glob, error) {
	if pattern == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	var b strings.Builder
	b.WriteString(`(?s)^`)
	if foldCase {
		b.WriteString(`(?i)`)
	}
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '[':
			end, class, err := globClass(rs, i)
			if err != nil {
				return nil, fmt.Errorf("glob %q: %w", pattern, err)
			}
			b.WriteString(class)
			i = end
		case '\\':
			if i+1 == len(rs) {
				return nil, fmt.Errorf("glob %q ends with a lone backslash", pattern)
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	return &Glob{pattern: pattern, re: re}, nil
}

// globClass translates the character class starting at rs[start] == '['.
func globClass(rs []rune, start int) (end int, class string, err error) {
	var b strings.Builder
	b.WriteString("[")
	i := start + 1
	if i < len(rs) && rs[i] == '!' {
		b.WriteString("^")
		i++
	}
	first := i
	for ; i < len(rs); i++ {
		r := rs[i]
		if r == ']' && i > first {
			b.WriteString("]")
			return i, b.String(), nil
		}
		if r == '\\' || r == '[' || r == ']' || r == '^' {
			b.WriteString(`\`)
		}
		b.WriteRune(r)
	}
	return 0, "", fmt.Errorf("unclosed [ at position %d", start+1)
}

// Match reports whether name matches the whole glob.
func (g *Glob) Match(name string) bool { return g.re.MatchString(name) }

// String returns the glob as written.
func (g *Glob) String() string { return g.pattern }

// MatchGlob reports whether name matches pattern; an invalid pattern matches
// nothing (Load has already rejected invalid patterns in a loaded config).
func MatchGlob(pattern, name string) bool {
	g, err := CompileGlob(pattern)
	return err == nil && g.Match(name)
}

// MatchRefGlob is MatchGlob for git refs (CompileRefGlob).
func MatchRefGlob(pattern, ref string) bool {
	g, err := CompileRefGlob(pattern)
	return err == nil && g.Match(ref)
}
