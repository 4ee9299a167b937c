package setup

import (
	"slices"
	"strings"
	"testing"
)

func TestEventsAreTheHandledOnesThatNeedASubscription(t *testing.T) {
	cases := []struct {
		name    string
		handled []string
		want    []string
	}{
		{"installation events come without subscribing and GitHub refuses them in default_events",
			[]string{"installation", "installation_repositories", "workflow_run"}, []string{"workflow_run"}},
		{"an event two handlers share is listed once",
			[]string{"check_run", "push", "check_run"}, []string{"check_run", "push"}},
		{"sorted, so the manifest does not change from start to start",
			[]string{"workflow_run", "issue_comment", "pull_request"}, []string{"issue_comment", "pull_request", "workflow_run"}},
		{"no handlers, no events", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Events(c.handled); !slices.Equal(got, c.want) {
				t.Errorf("Events(%v) = %v, want %v", c.handled, got, c.want)
			}
		})
	}
}

func TestManifestPointsGitHubAtThePublicURL(t *testing.T) {
	m := NewManifest("https://ripcord.example.com", "", "a1b2c3", []string{"push", "installation"})
	checks := map[string][2]string{
		"url":             {m.URL, "https://ripcord.example.com"},
		"hook_attributes": {m.HookAttributes.URL, "https://ripcord.example.com/api/github/hook"},
		"redirect_url":    {m.RedirectURL, "https://ripcord.example.com/setup/callback"},
		"setup_url":       {m.SetupURL, "https://ripcord.example.com/setup"},
		"callback_urls":   {strings.Join(m.CallbackURLs, ","), "https://ripcord.example.com/login/callback"},
		"name":            {m.Name, "ripcord-a1b2c3"},
	}
	for field, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", field, c[0], c[1])
		}
	}
	if m.Public || !m.HookAttributes.Active {
		t.Errorf("public = %v, hook active = %v; want a private App with an active webhook", m.Public, m.HookAttributes.Active)
	}
	if !slices.Equal(m.DefaultEvents, []string{"push"}) {
		t.Errorf("default_events = %v, want [push]", m.DefaultEvents)
	}
}

func TestManifestAsksForLeastAccess(t *testing.T) {
	want := map[string]string{"actions": "write", "checks": "write", "contents": "write", "deployments": "write",
		"issues": "write", "metadata": "read", "pull_requests": "write"}
	got := NewManifest("https://r.example", "acme", "x", nil).DefaultPermissions
	if len(got) != len(want) {
		t.Errorf("default_permissions = %v, want exactly %v", got, want)
	}
	for name, access := range want {
		if got[name] != access {
			t.Errorf("default_permissions[%s] = %q, want %q", name, got[name], access)
		}
	}
	for _, p := range Permissions {
		if p.Why == "" {
			t.Errorf("permission %s does not say why ripcord needs it", p.Name)
		}
	}
}

func TestManifestNameFitsGitHubsLimit(t *testing.T) {
	cases := []struct{ name, org, want string }{
		{"an organisation's App is named after it", "acme", "ripcord-acme"},
		{"a long organisation name is cut to 34 characters", strings.Repeat("o", 39), "ripcord-" + strings.Repeat("o", 26)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NewManifest("https://r.example", c.org, "x", nil).Name; got != c.want {
				t.Errorf("name = %q, want %q", got, c.want)
			}
		})
	}
}

func TestFormAction(t *testing.T) {
	cases := []struct{ name, web, org, want string }{
		{"personal account on github.com", "https://github.com/", "", "https://github.com/settings/apps/new?state=s1"},
		{"organisation on github.com", "https://github.com/", "acme", "https://github.com/organizations/acme/settings/apps/new?state=s1"},
		{"GitHub Enterprise Server under a path", "https://ghe.example.com/", "acme", "https://ghe.example.com/organizations/acme/settings/apps/new?state=s1"},
		{"a web URL without its trailing slash", "https://ghe.example.com", "", "https://ghe.example.com/settings/apps/new?state=s1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := FormAction(c.web, c.org, "s1"); got != c.want {
				t.Errorf("FormAction = %q, want %q", got, c.want)
			}
		})
	}
}

func TestCheckOrg(t *testing.T) {
	cases := []struct {
		name, org string
		ok        bool
	}{
		{"a plain organisation", "acme-corp", true},
		{"a path that would leave the organisation's settings", "acme/../settings", false},
		{"a leading hyphen", "-acme", false},
		{"forty characters", strings.Repeat("a", 40), false},
		{"a space", "acme corp", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := CheckOrg(c.org); (err == nil) != c.ok {
				t.Errorf("CheckOrg(%q) = %v, want ok=%v", c.org, err, c.ok)
			}
		})
	}
}
