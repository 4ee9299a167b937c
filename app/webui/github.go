package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
)

// gitHubTimeout bounds each call to GitHub made while a person waits.
const gitHubTimeout = 15 * time.Second

// maxPages bounds how many pages of installations or repositories one
// sign-in reads (100 per page), so a huge account cannot stall a page.
const maxPages = 20

// errTokenRefused is GitHub's 401 to a user token: revoked, expired, or
// the App's authorisation withdrawn. The person must sign in again.
var errTokenRefused = errors.New("GitHub no longer accepts the sign-in")

// errCodeRefused is GitHub's bad_verification_code: the sign-in code was
// used already (a reloaded callback page) or is older than its 10 minutes.
// Signing in again gets a new one.
var errCodeRefused = errors.New("GitHub did not accept the sign-in code")

// gitHub is what the pages ask GitHub for a person: the narrow set of calls,
// so tests can see them and a fake can stand in.
type gitHub interface {
	// Exchange turns the code from GitHub's sign-in page into a user token.
	Exchange(ctx context.Context, code, redirectURI string) (string, error)
	// User is the login the token belongs to.
	User(ctx context.Context, token string) (string, error)
	// ReadableRepos are the repositories ("owner/name") the token's user can
	// read through the App's installations.
	ReadableRepos(ctx context.Context, token string) ([]string, error)
}

// userClient calls GitHub with the App's OAuth client and user tokens.
type userClient struct {
	app    func() pipeline.AppIdentity
	apiURL string
	http   *http.Client
}

func newUserClient(app func() pipeline.AppIdentity, apiURL string) *userClient {
	return &userClient{app: app, apiURL: apiURL, http: &http.Client{Timeout: gitHubTimeout}}
}

func (c *userClient) Exchange(ctx context.Context, code, redirectURI string) (string, error) {
	app := c.app()
	form := url.Values{"client_id": {app.ClientID}, "client_secret": {app.ClientSecret},
		"code": {code}, "redirect_uri": {redirectURI}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, webURL(app, "login/oauth/access_token"), strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("exchange the sign-in code: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("exchange the sign-in code: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("exchange the sign-in code: %w", err)
	}
	// GitHub answers 200 with an "error" field for a bad code or client.
	var out struct {
		AccessToken      string `json:"access_token"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil {
		return "", fmt.Errorf("exchange the sign-in code: GitHub answered %s", resp.Status)
	}
	if out.Error == "bad_verification_code" {
		return "", fmt.Errorf("exchange the sign-in code: %w: %s", errCodeRefused, out.ErrorDescription)
	}
	if out.Error != "" || out.AccessToken == "" {
		return "", fmt.Errorf("exchange the sign-in code: GitHub refused: %s %s", out.Error, out.ErrorDescription)
	}
	return out.AccessToken, nil
}

// client is go-github with the user's token against the configured API.
func (c *userClient) client(token string) (*github.Client, error) {
	base, err := url.Parse(c.apiURL)
	if err != nil {
		return nil, fmt.Errorf("github.api_url %q: %w", c.apiURL, err)
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	gh := github.NewClient(c.http).WithAuthToken(token)
	gh.BaseURL = base
	return gh, nil
}

func (c *userClient) User(ctx context.Context, token string) (string, error) {
	gh, err := c.client(token)
	if err != nil {
		return "", err
	}
	u, _, err := gh.Users.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("read the signed-in user: %w", err)
	}
	if u.GetLogin() == "" {
		return "", fmt.Errorf("read the signed-in user: GitHub gave no login")
	}
	return u.GetLogin(), nil
}

func (c *userClient) ReadableRepos(ctx context.Context, token string) ([]string, error) {
	gh, err := c.client(token)
	if err != nil {
		return nil, err
	}
	var ids []int64
	opts := &github.ListOptions{PerPage: 100}
	for range maxPages {
		insts, resp, err := gh.Apps.ListUserInstallations(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the user's installations of the App: %w", refused(resp, err))
		}
		for _, in := range insts {
			ids = append(ids, in.GetID())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	var repos []string
	for _, id := range ids {
		opts := &github.ListOptions{PerPage: 100}
		for range maxPages {
			rs, resp, err := gh.Apps.ListUserRepos(ctx, id, opts)
			if err != nil {
				return nil, fmt.Errorf("list the repositories of installation %d the user can read: %w", id, refused(resp, err))
			}
			for _, r := range rs.Repositories {
				repos = append(repos, r.GetFullName())
			}
			if resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
	}
	return repos, nil
}

// webURL is a path on GitHub's web side (github.com or a GHES host).
func webURL(app pipeline.AppIdentity, path string) string {
	base := app.WebURL
	if base == "" {
		base = "https://github.com/"
	}
	return strings.TrimSuffix(base, "/") + "/" + path
}

// refused marks a 401 as errTokenRefused, keeping GitHub's error too.
func refused(resp *github.Response, err error) error {
	if resp != nil && resp.StatusCode == http.StatusUnauthorized {
		return errors.Join(errTokenRefused, err)
	}
	return err
}
