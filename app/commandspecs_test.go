package app

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/app/rolloutflow"
)

// commandRunners are the runners capabilities hands to commands.Register,
// by the expression capabilities.go writes for each.
var commandRunners = map[string]func(pipeline.Deps) commands.Runner{
	"recoveryflow.RetryCommand(d)":    recoveryflow.RetryCommand,
	"rollbackflow.RollbackCommand(d)": rollbackflow.RollbackCommand,
	"rolloutflow.ApproveCommand(d)":   rolloutflow.ApproveCommand,
}

// Help says where a command works from its Spec.OnIssues; the handler
// decides from its runner's RunsOnIssues. If they disagree, help promises
// an issue command that is answered "pull request comments only", or the
// other way round. Every runner the server registers needs a Spec (without
// one no comment can reach it), and every Spec but help a runner.
func TestCommandSpecsAgreeWithTheirRunners(t *testing.T) {
	registered := registeredRunners(t)
	for _, expr := range registered {
		if commandRunners[expr] == nil {
			t.Fatalf("capabilities.go registers the command runner %s, which this test does not build: add it to commandRunners", expr)
		}
	}
	specs := map[string]commands.Spec{}
	for _, s := range commands.Specs {
		specs[s.Name] = s
	}
	ran := map[string]bool{}
	for _, expr := range registered {
		r := commandRunners[expr](pipeline.Deps{})
		ran[r.Name()] = true
		s, ok := specs[r.Name()]
		if !ok {
			t.Errorf("runner %s (%s) has no commands.Spec: help does not list it and Parse never runs it", r.Name(), expr)
			continue
		}
		ir, ok := r.(commands.IssueRunner)
		onIssues := ok && ir.RunsOnIssues()
		if onIssues != s.OnIssues {
			t.Errorf("/ripcord %s: Spec.OnIssues is %v (what help says) but its runner's RunsOnIssues is %v (what the handler does)",
				s.Name, s.OnIssues, onIssues)
		}
	}
	for _, s := range commands.Specs {
		if s.Name != commands.Help && !ran[s.Name] {
			t.Errorf("/ripcord %s has a Spec but no runner: it would be answered \"not available yet\"", s.Name)
		}
	}
}

// registeredRunners reads capabilities.go for the runners it passes to
// commands.Register, so a runner added there cannot escape the test above.
func registeredRunners(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "capabilities.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	calls := 0
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Register" {
			return true
		}
		if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "commands" {
			return true
		}
		calls++
		for _, arg := range call.Args[1:] {
			var b strings.Builder
			if err := printer.Fprint(&b, fset, arg); err != nil {
				t.Fatal(err)
			}
			out = append(out, b.String())
		}
		return true
	})
	if calls != 1 || len(out) == 0 {
		t.Fatalf("capabilities.go has %d commands.Register calls with runners %v, want one with the runners", calls, out)
	}
	return out
}
