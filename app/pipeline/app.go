package pipeline

import (
	"errors"

	"github.com/ripcord/ripcord/app/ghclient"
)

// AppIdentity is what the server knows of its GitHub App right now: from the
// configuration, or registered through the set-up page (and then swapped in
// without a restart). Pages and capabilities read it through Deps.App on
// every use rather than keeping a copy.
type AppIdentity struct {
	// Configured: an App id and private key are known, so ripcord can act
	// as the App.
	Configured bool
	ID         int64
	Slug       string // "ripcord-acme"; empty when unknown
	// HTMLURL is the App's page on GitHub (install link: HTMLURL+"/installations/new").
	HTMLURL string
	// ClientID and ClientSecret are the App's OAuth client, for "sign in
	// with GitHub"; empty when unknown.
	ClientID     string
	ClientSecret string
	// WebURL is GitHub's web address for sign-in and links:
	// "https://github.com/" or a GitHub Enterprise Server's base URL.
	WebURL string
}

// NoApp is a request refused because the server has no GitHub App
// (github.app_id and github.private_key unset, none registered at /setup):
// the server's set-up, not the request, is what to fix, so every API
// answers it 503, the same way. It is ghclient.ErrNotConfigured (errors.Is),
// which a GitHub call fails with in the same situation.
type NoApp struct{ Repository string }

func (e *NoApp) Error() string { return NotInstalled(notConfigured, e.Repository) }

func (e *NoApp) Is(target error) bool { return target == ghclient.ErrNotConfigured }

func notConfigured() AppIdentity { return AppIdentity{} }

// AppNotConfigured reports whether err comes from the server having no
// GitHub App: a *NoApp, or a GitHub call that failed for want of one.
func AppNotConfigured(err error) bool { return errors.Is(err, ghclient.ErrNotConfigured) }

// NotInstalled says why no installation of the App can act on repository:
// no App is configured at all (a server still being set up), or the App
// is not installed there.
// An empty repository (a release opened without one, then rolled out) is
// said as such: "cannot act on : set …" and "not installed on " named
// nothing.
func NotInstalled(app func() AppIdentity, repository string) string {
	if app != nil && !app().Configured {
		on := repository
		if on == "" {
			on = "GitHub"
		}
		return "no GitHub App is configured, so ripcord cannot act on " + on +
			": set github.app_id and github.private_key (RIPCORD_GITHUB_APP_ID, RIPCORD_GITHUB_PRIVATE_KEY), or register one at /setup"
	}
	if repository == "" {
		return "no repository is named, so no installation of the ripcord App can act for it: name the app's repository (owner/name)"
	}
	return "the ripcord App is not installed on " + repository
}
