package repoconfig

import "strings"

// Deploy names one environment of one app.
type Deploy struct {
	App         string
	Environment string
}

// AppNames returns the apps in file order.
func (c *Config) AppNames() []string { return append([]string(nil), c.appOrder...) }

// EnvironmentNames returns the app's environments in file order.
func (a *App) EnvironmentNames() []string { return append([]string(nil), a.envOrder...) }

// Environment returns the environment env of app.
func (c *Config) Environment(app, env string) (*Environment, bool) {
	a, ok := c.Apps[app]
	if !ok {
		return nil, false
	}
	e, ok := a.Environments[env]
	return e, ok
}

// AppForWorkflow returns every (app, environment) whose workflows list file,
// in file order. One workflow often deploys several environments (deploy.yml
// for staging and prod), so the caller narrows the answer with the
// environment the run deployed to. file may be a bare name ("deploy.yml") or
// a path as GitHub reports it (".github/workflows/deploy.yml", with or
// without an "@ref" suffix).
func (c *Config) AppForWorkflow(file string) []Deploy {
	want := workflowName(file)
	var out []Deploy
	for _, app := range c.appOrder {
		a := c.Apps[app]
		for _, env := range a.envOrder {
			for _, w := range a.Environments[env].Workflows {
				if workflowName(w) == want {
					out = append(out, Deploy{App: app, Environment: env})
					break
				}
			}
		}
	}
	return out
}

// workflowName reduces a workflow reference to its path below .github/workflows.
func workflowName(s string) string {
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(s, "./")
	return strings.TrimPrefix(s, ".github/workflows/")
}
