package app

import (
	"testing"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/pipeline"
)

// Help says where a command works from its Spec.OnIssues; the handler
// decides from its runner's RunsOnIssues. If they disagree, help promises
// an issue command that is answered "pull request comments only", or the
// other way round. Every runner the server registers needs a Spec (without
// one no comment can reach it), and every Spec but help a runner.
func TestCommandSpecsAgreeWithTheirRunners(t *testing.T) {
	t.Parallel()
	specs := map[string]commands.Spec{}
	for _, s := range commands.Specs {
		specs[s.Name] = s
	}
	ran := map[string]bool{}
	for _, r := range commandRunners(pipeline.Deps{}) {
		ran[r.Name()] = true
		s, ok := specs[r.Name()]
		if !ok {
			t.Errorf("runner %s has no commands.Spec: help does not list it and Parse never runs it", r.Name())
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
