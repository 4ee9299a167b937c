package ghclient

import (
	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/shurcooL/githubv4"
	"golang.org/x/oauth2"
)

// Live is a ClientCreator that asks current for the creator to use on every
// call, so the App's credentials can change while the server runs (an App
// registered through /setup) and every capability, holding this one value,
// acts as the new App from its next client on.
func Live(current func() githubapp.ClientCreator) githubapp.ClientCreator { return live(current) }

type live func() githubapp.ClientCreator

func (l live) NewAppClient() (*github.Client, error)     { return l().NewAppClient() }
func (l live) NewAppV4Client() (*githubv4.Client, error) { return l().NewAppV4Client() }
func (l live) NewInstallationClient(id int64) (*github.Client, error) {
	return l().NewInstallationClient(id)
}
func (l live) NewInstallationV4Client(id int64) (*githubv4.Client, error) {
	return l().NewInstallationV4Client(id)
}
func (l live) NewTokenSourceClient(ts oauth2.TokenSource) (*github.Client, error) {
	return l().NewTokenSourceClient(ts)
}
func (l live) NewTokenSourceV4Client(ts oauth2.TokenSource) (*githubv4.Client, error) {
	return l().NewTokenSourceV4Client(ts)
}
func (l live) NewTokenClient(token string) (*github.Client, error) { return l().NewTokenClient(token) }
func (l live) NewTokenV4Client(token string) (*githubv4.Client, error) {
	return l().NewTokenV4Client(token)
}
