package githubtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
)

// signIn walks the browser's side of the OAuth flow and returns the code.
func signIn(t *testing.T, o *OAuth, state string) string {
	t.Helper()
	q := url.Values{"client_id": {OAuthClientID}, "state": {state}, "redirect_uri": {"http://ripcord.test/login/callback"}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(o.WebURL() + "login/oauth/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.Host != "ripcord.test" || loc.Query().Get("state") != state {
		t.Fatalf("authorize = %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

func exchange(t *testing.T, o *OAuth, secret, code string) map[string]string {
	t.Helper()
	form := url.Values{"client_id": {OAuthClientID}, "client_secret": {secret}, "code": {code}}
	req, _ := http.NewRequest(http.MethodPost, o.WebURL()+"login/oauth/access_token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOAuthSignIn(t *testing.T) {
	s := NewServer(t)
	o := NewOAuth(s)
	var repos []string
	for i := range 35 { // more than one page of 30
		repos = append(repos, fmt.Sprintf("acme/app%02d", i))
	}
	o.AddUser("alice", append(repos, "other-org/tool")...)
	o.SignInAs("alice")

	code := signIn(t, o, "st-1")
	if got := exchange(t, o, "wrong-secret", code); got["error"] != "incorrect_client_credentials" {
		t.Errorf("a wrong client secret got %v", got)
	}
	got := exchange(t, o, OAuthClientSecret, code)
	token := got["access_token"]
	if token == "" {
		t.Fatalf("exchange = %v", got)
	}
	if again := exchange(t, o, OAuthClientSecret, code); again["error"] != "bad_verification_code" {
		t.Errorf("a code used twice got %v", again)
	}

	ctx := context.Background()
	gh := github.NewClient(nil).WithAuthToken(token)
	gh.BaseURL, _ = url.Parse(s.URL())
	u, _, err := gh.Users.Get(ctx, "")
	if err != nil || u.GetLogin() != "alice" {
		t.Fatalf("GET /user = %v, %v", u.GetLogin(), err)
	}
	insts, _, err := gh.Apps.ListUserInstallations(ctx, nil)
	if err != nil || len(insts) != 2 {
		t.Fatalf("GET /user/installations = %d installations, %v", len(insts), err)
	}
	var seen []string
	opts := &github.ListOptions{}
	for {
		rs, resp, err := gh.Apps.ListUserRepos(ctx, UserInstallationID("acme"), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs.Repositories {
			seen = append(seen, r.GetFullName())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if !slices.Equal(seen, repos) {
		t.Errorf("repositories of the acme installation: %v, want %v", seen, repos)
	}

	bad := github.NewClient(nil).WithAuthToken("ghu_made_up")
	bad.BaseURL = gh.BaseURL
	if _, resp, err := bad.Users.Get(ctx, ""); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /user with a made-up token = %v", err)
	}
	o.SignInAs("")
	resp, err := http.Get(o.WebURL() + "login/oauth/authorize?client_id=" + OAuthClientID + "&redirect_uri=http://ripcord.test/cb")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("authorize with no one signed in to GitHub = %d, want 403", resp.StatusCode)
	}
}
