package webui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
)

// TestUserClientAgainstGitHub runs the real calls against the fake GitHub,
// which checks the API requests against GitHub's OpenAPI description.
func TestUserClientAgainstGitHub(t *testing.T) {
	t.Parallel()
	gh := githubtest.NewServer(t)
	o := githubtest.NewOAuth(gh)
	o.AddUser("alice", "acme/shop", "acme/api", "other/tool")
	o.SignInAs("alice")
	app := pipeline.AppIdentity{Configured: true, ClientID: githubtest.OAuthClientID,
		ClientSecret: githubtest.OAuthClientSecret, WebURL: o.WebURL()}
	c := newUserClient(func() pipeline.AppIdentity { return app }, gh.URL())
	ctx := context.Background()

	if _, err := c.Exchange(ctx, "never-issued", "http://ripcord.test/login/callback"); !errors.Is(err, errCodeRefused) {
		t.Errorf("a code GitHub never issued: %v, want errCodeRefused (sign in again)", err)
	}
	code := authorizeCode(t, o.WebURL())
	token, err := c.Exchange(ctx, code, "http://ripcord.test/login/callback")
	if err != nil {
		t.Fatal(err)
	}
	if login, err := c.User(ctx, token); err != nil || login != "alice" {
		t.Errorf("User = %q, %v", login, err)
	}
	repos, err := c.ReadableRepos(ctx, token)
	slices.Sort(repos)
	if err != nil || !slices.Equal(repos, []string{"acme/api", "acme/shop", "other/tool"}) {
		t.Errorf("ReadableRepos = %v, %v", repos, err)
	}
	if _, err := c.ReadableRepos(ctx, "ghu_revoked"); !errors.Is(err, errTokenRefused) {
		t.Errorf("a token GitHub refuses: %v, want errTokenRefused", err)
	}
}

// authorizeCode follows GitHub's authorize redirect as a browser would, up
// to the code.
func authorizeCode(t *testing.T, web string) string {
	t.Helper()
	q := url.Values{"client_id": {githubtest.OAuthClientID}, "state": {"s"}, "redirect_uri": {"http://ripcord.test/login/callback"}}
	req, _ := http.NewRequest(http.MethodGet, web+"login/oauth/authorize?"+q.Encode(), nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}
