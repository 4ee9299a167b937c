package ghclient

import (
	"errors"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/shurcooL/githubv4"
	"golang.org/x/oauth2"
)

// ErrNotConfigured is what every GitHub call fails with while the App has
// no identity; it says which settings give it one.
var ErrNotConfigured = errors.New("github app is not configured: set github.app_id and github.private_key (RIPCORD_GITHUB_APP_ID, RIPCORD_GITHUB_PRIVATE_KEY)")

// NotConfigured is a ClientCreator for a server started without App
// credentials: `ripcord serve` still runs (setup page, health, API), and
// every attempt to reach GitHub fails with ErrNotConfigured.
var NotConfigured githubapp.ClientCreator = notConfigured{}

type notConfigured struct{}

func (notConfigured) NewAppClient() (*github.Client, error)     { return nil, ErrNotConfigured }
func (notConfigured) NewAppV4Client() (*githubv4.Client, error) { return nil, ErrNotConfigured }
func (notConfigured) NewInstallationClient(int64) (*github.Client, error) {
	return nil, ErrNotConfigured
}
func (notConfigured) NewInstallationV4Client(int64) (*githubv4.Client, error) {
	return nil, ErrNotConfigured
}
func (notConfigured) NewTokenSourceClient(oauth2.TokenSource) (*github.Client, error) {
	return nil, ErrNotConfigured
}
func (notConfigured) NewTokenSourceV4Client(oauth2.TokenSource) (*githubv4.Client, error) {
	return nil, ErrNotConfigured
}
func (notConfigured) NewTokenClient(string) (*github.Client, error)     { return nil, ErrNotConfigured }
func (notConfigured) NewTokenV4Client(string) (*githubv4.Client, error) { return nil, ErrNotConfigured }
