package configload

import (
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/repoconfig"
)

// CheckName is the check run that reports whether a commit's config loads.
const CheckName = "ripcord/config"

// maxAnnotations is GitHub's limit of annotations per check-run request.
const maxAnnotations = 50

// CheckOutput is what the ripcord/config check run says about one load.
type CheckOutput struct {
	Conclusion  string // success or failure
	Title       string
	Summary     string
	Annotations []*github.CheckRunAnnotation
}

// RenderCheck turns a load into the check run's content: success with what
// the config covers, or failure with every problem, each also an annotation
// at its line so it shows in the pull request's diff.
func RenderCheck(res Result) CheckOutput {
	if res.Config != nil {
		return CheckOutput{Conclusion: "success", Title: repoconfig.Path + " is valid", Summary: describeConfig(res)}
	}
	n := len(res.Problems)
	out := CheckOutput{Conclusion: "failure", Title: fmt.Sprintf("%d %s in %s", n, plural(n, "problem", "problems"), repoconfig.Path)}
	var b strings.Builder
	fmt.Fprintf(&b, "ripcord cannot act on this repository until %s loads: retries, rollbacks and commands are off.\n\n", res.Source.Path)
	for _, p := range res.Problems {
		fmt.Fprintf(&b, "- `%s`\n", p.Format(res.Source.Path))
	}
	b.WriteString("\nCheck a file before committing it with `ripcord validate` or `POST /api/v1/validate`.\n")
	out.Summary = b.String()
	for i, p := range res.Problems {
		if i == maxAnnotations {
			break
		}
		out.Annotations = append(out.Annotations, annotation(res.Source.Path, p))
	}
	return out
}

func annotation(path string, p repoconfig.Problem) *github.CheckRunAnnotation {
	line := max(p.Line, 1)
	a := &github.CheckRunAnnotation{
		Path: github.String(path), StartLine: github.Int(line), EndLine: github.Int(line),
		AnnotationLevel: github.String("failure"), Message: github.String(p.Message),
	}
	if p.Path != "" {
		a.Title = github.String(p.Path)
	}
	if p.Column > 0 {
		a.StartColumn, a.EndColumn = github.Int(p.Column), github.Int(p.Column)
	}
	return a
}

// describeConfig lists what a valid config makes ripcord look after.
func describeConfig(res Result) string {
	cfg := res.Config
	var b strings.Builder
	fmt.Fprintf(&b, "Read from `%s`.\n\n", res.Source)
	if len(cfg.Apps) == 0 {
		b.WriteString("No apps are configured, so ripcord handles no workflow failures here.\n")
	}
	for _, app := range cfg.AppNames() {
		a := cfg.Apps[app]
		for _, env := range a.EnvironmentNames() {
			e := a.Environments[env]
			mode := e.Rollback.Mode
			if mode == "" {
				mode = "none (alert)"
			}
			fmt.Fprintf(&b, "- **%s** in **%s**: workflows %s, rollback %s\n", app, env, listOrNone(e.Workflows), mode)
		}
	}
	r := cfg.Recovery
	fmt.Fprintf(&b, "\nRecovery: max_retries %d, initial_backoff %s, multiplier %g, max_backoff %s", r.MaxRetries, r.InitialBackoff, r.Multiplier, r.MaxBackoff)
	if types := sortedKeys(r.FailureTypes); len(types) > 0 {
		fmt.Fprintf(&b, ", failure_types %s", strings.Join(types, ", "))
	}
	fmt.Fprintf(&b, ".\nCommands: retry needs %s, rollback %s, approve %s.\n", cfg.Commands.Retry, cfg.Commands.Rollback, cfg.Commands.Approve)
	return b.String()
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
