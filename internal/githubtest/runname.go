package githubtest

import (
	"fmt"
	"regexp"
)

// runNameInput is the one expression a run-name template may hold here:
// ${{ inputs.<name> }}.
var runNameInput = regexp.MustCompile(`\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}`)

// SetRunName gives the runs dispatched of workflow (a file name such as
// deploy.yml) in repo a run-name, as the workflow's `run-name:` key does on
// GitHub: each ${{ inputs.x }} of template becomes the dispatch's input x.
// A run's display_title is its run-name; without one it is the workflow's
// name, as before.
func (s *Server) SetRunName(repo, workflow, template string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(repo)
	if r.runNames == nil {
		r.runNames = map[string]string{}
	}
	r.runNames[workflow] = template
}

// runNameLocked is the run-name of a dispatch of workflow with inputs, or
// "" when the workflow has none.
func (r *repoState) runNameLocked(workflow string, inputs map[string]any) string {
	template, ok := r.runNames[workflow]
	if !ok {
		return ""
	}
	return runNameInput.ReplaceAllStringFunc(template, func(expr string) string {
		v, ok := inputs[runNameInput.FindStringSubmatch(expr)[1]]
		if !ok {
			return ""
		}
		return fmt.Sprint(v)
	})
}
