package setup

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Paths of the set-up flow on ripcord's side.
const (
	PagePath     = "/setup"
	CallbackPath = "/setup/callback"
	// HookPath and LoginCallbackPath are served by other rooms (the webhook
	// intake, the releases page's sign-in); the manifest names them.
	HookPath          = "/api/github/hook"
	LoginCallbackPath = "/login/callback"
)

// Permission is one permission the App asks for: GitHub's name for it, the
// least access that works, and why ripcord needs it (the README lists them).
type Permission struct {
	Name   string
	Access string // read | write
	Why    string
}

// Permissions is exactly what ripcord uses, each with the least access that
// works. Every write here is a call some room makes; a permission not listed
// is one ripcord does without.
var Permissions = []Permission{
	{"actions", "write", "re-run the failed jobs of a deploy workflow and dispatch the deploy workflow for a rollback or a wave; read runs and their jobs"},
	{"checks", "write", "report gates, the config check and rollouts as check runs, with the Roll back and Approve buttons"},
	{"contents", "write", "read .github/ripcord.yml and release files; push the rollback branch and its commit with trailers"},
	{"deployments", "write", "create GitHub deployments and their statuses for each release, and answer deployment protection rules"},
	{"issues", "write", "answer /ripcord commands with a reaction and a comment, and open an alert issue when a person must step in"},
	{"metadata", "read", "look up repositories and collaborators' permission (GitHub grants it to every App)"},
	{"pull_requests", "write", "open and update rollback pull requests and read release pull requests"},
}

// automaticEvents are sent to every App without a subscription; GitHub
// refuses them in default_events.
var automaticEvents = []string{"github_app_authorization", "installation", "installation_repositories",
	"installation_target", "meta", "ping"}

// Events is the manifest's default_events: the events ripcord's handlers
// handle, sorted, once each, without those GitHub sends anyway.
func Events(handled []string) []string {
	var out []string
	for _, e := range handled {
		if !slices.Contains(automaticEvents, e) && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// Manifest is GitHub's App manifest, as the registration form takes it.
type Manifest struct {
	Name               string            `json:"name"`
	URL                string            `json:"url"`
	Description        string            `json:"description"`
	HookAttributes     HookAttributes    `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	CallbackURLs       []string          `json:"callback_urls"`
	SetupURL           string            `json:"setup_url"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// HookAttributes is the App's webhook.
type HookAttributes struct {
	URL    string `json:"url"`
	Active bool   `json:"active"`
}

// maxAppName is GitHub's limit on an App's name.
const maxAppName = 34

// NewManifest is the manifest for a ripcord reachable at publicURL (no
// trailing slash), registered by owner (an organisation, or "" for the
// admin's own account) and handling the given events. suffix tells apart
// Apps registered on a personal account, since App names are unique on
// GitHub; the admin may still rename it on GitHub's page.
func NewManifest(publicURL, owner, suffix string, handled []string) Manifest {
	name := "ripcord-" + suffix
	if owner != "" {
		name = "ripcord-" + owner
	}
	if len(name) > maxAppName {
		name = name[:maxAppName]
	}
	perms := make(map[string]string, len(Permissions))
	for _, p := range Permissions {
		perms[p.Name] = p.Access
	}
	return Manifest{
		Name:               name,
		URL:                publicURL,
		Description:        "ripcord keeps releases safe: retries, rollbacks, gates and waves (" + publicURL + ")",
		HookAttributes:     HookAttributes{URL: publicURL + HookPath, Active: true},
		RedirectURL:        publicURL + CallbackPath,
		CallbackURLs:       []string{publicURL + LoginCallbackPath},
		SetupURL:           publicURL + PagePath,
		Public:             false,
		DefaultPermissions: perms,
		DefaultEvents:      Events(handled),
	}
}

// orgName is GitHub's rule for an organisation's login.
var orgName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$`)

// CheckOrg says what is wrong with an organisation name typed into the form.
func CheckOrg(org string) error {
	if !orgName.MatchString(org) {
		return fmt.Errorf("org %q is not an organisation name: letters, digits and single hyphens, at most 39 characters", org)
	}
	return nil
}

// FormAction is where the registration form posts the manifest: the new-App
// page of the admin's account or of the organisation, on GitHub or a GitHub
// Enterprise Server (webURL ends in "/"), carrying the state the callback
// will check.
func FormAction(webURL, org, state string) string {
	base := strings.TrimSuffix(webURL, "/") + "/"
	if org != "" {
		base += "organizations/" + url.PathEscape(org) + "/"
	}
	return base + "settings/apps/new?state=" + url.QueryEscape(state)
}
