package rollout

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// mustParse parses a document that must be free of parse problems.
func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	cfg, problems := Parse([]byte(doc))
	if len(problems) > 0 {
		t.Fatalf("parse problems:\n%v", Problems(problems))
	}
	return cfg
}

// mustPlan parses and plans a document that must be valid.
func mustPlan(t *testing.T, doc string, opts PlanOptions) *Plan {
	t.Helper()
	cfg := mustParse(t, doc)
	plan, problems := NewPlan(cfg.Rollout, cfg.Targets, opts)
	if len(problems) > 0 {
		t.Fatalf("plan problems:\n%v", Problems(problems))
	}
	return plan
}

// problemsOf returns the parse problems of doc or, when it parses, the plan
// problems, the way a caller sees them.
func problemsOf(doc string, opts PlanOptions) []Problem {
	cfg, problems := Parse([]byte(doc))
	if len(problems) > 0 {
		return problems
	}
	_, problems = NewPlan(cfg.Rollout, cfg.Targets, opts)
	return problems
}

func seedDoc(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func stage(t *testing.T, p *Plan, name string) Stage {
	t.Helper()
	i := slices.IndexFunc(p.Stages, func(s Stage) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("no stage %q in %v", name, p.StageNames())
	}
	return p.Stages[i]
}

func passNames(s Stage) []string {
	var out []string
	for _, p := range s.Passes {
		out = append(out, p.Name)
	}
	return out
}

func batchSizes(p Pass) []int {
	var out []int
	for _, b := range p.Batches {
		out = append(out, len(b.Hosts))
	}
	return out
}

func join(ss []string) string { return strings.Join(ss, ", ") }

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// columnOf is the 1-based column where at first appears on line of doc, so
// tests state positions as text rather than counted numbers.
func columnOf(t *testing.T, doc string, line int, at string) int {
	t.Helper()
	lines := strings.Split(doc, "\n")
	if line < 1 || line > len(lines) {
		t.Fatalf("no line %d", line)
	}
	i := strings.Index(lines[line-1], at)
	if i < 0 {
		t.Fatalf("%q is not on line %d: %q", at, line, lines[line-1])
	}
	return i + 1
}
