package pipeline

import (
	"strings"
	"testing"
)

// The refusal for want of an App or an installation names what to fix
// also when the release names no repository: it said "cannot act on :
// set …" and "not installed on ", naming nothing.
func TestNotInstalledWithoutARepositoryNamesWhatToFix(t *testing.T) {
	noApp := func() AppIdentity { return AppIdentity{} }
	app := func() AppIdentity { return AppIdentity{Configured: true} }
	cases := []struct {
		name, got, want string
	}{
		{"no App, no repository", (&NoApp{}).Error(), "cannot act on GitHub: set github.app_id"},
		{"no App, no repository, as a refusal", NotInstalled(noApp, ""), "cannot act on GitHub: set github.app_id"},
		{"no App, a repository", NotInstalled(noApp, "acme/checkout"), "cannot act on acme/checkout: set github.app_id"},
		{"an App, no repository", NotInstalled(app, ""), "no repository is named"},
		{"an App, a repository", NotInstalled(app, "acme/checkout"), "the ripcord App is not installed on acme/checkout"},
	}
	for _, c := range cases {
		if !strings.Contains(c.got, c.want) || strings.Contains(c.got, "on :") || strings.HasSuffix(c.got, " ") {
			t.Errorf("%s: %q, want it to say %q", c.name, c.got, c.want)
		}
	}
}
