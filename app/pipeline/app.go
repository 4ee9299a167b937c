package pipeline

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

// NotInstalled says why no installation of the App can act on repository:
// no App is configured at all (a server still being set up), or the App
// is not installed there.
func NotInstalled(app func() AppIdentity, repository string) string {
	if app != nil && !app().Configured {
		return "no GitHub App is configured, so ripcord cannot act on " + repository +
			": set github.app_id and github.private_key (RIPCORD_GITHUB_APP_ID, RIPCORD_GITHUB_PRIVATE_KEY), or register one at /setup"
	}
	return "the ripcord App is not installed on " + repository
}
