package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// exchangeTimeout bounds the one call to GitHub the callback makes.
const exchangeTimeout = 30 * time.Second

// codePattern is what a manifest code may look like; anything else is
// refused before it reaches a URL path.
var codePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// errCodeRefused is GitHub saying the code is unknown, used or expired.
var errCodeRefused = errors.New("GitHub did not accept the code")

// errUnavailable is an exchange that failed on the way to or in GitHub
// (network error, timeout, HTTP 5xx): the code was not used and can be
// sent again.
var errUnavailable = errors.New("GitHub could not be reached")

// conversion is GitHub's answer to POST /app-manifests/{code}/conversions
// (the fields ripcord keeps).
type conversion struct {
	ID            int64  `json:"id"`
	Slug          string `json:"slug"`
	HTMLURL       string `json:"html_url"`
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	WebhookSecret string `json:"webhook_secret"`
	PEM           string `json:"pem"`
}

// exchange trades the one-time code for the App's credentials. The call is
// unauthenticated: the code is the proof.
func exchange(ctx context.Context, client *http.Client, apiURL, code string, now time.Time) (Credentials, error) {
	if !codePattern.MatchString(code) {
		return Credentials{}, fmt.Errorf("code %q: %w (it is not a code GitHub hands out)", code, errCodeRefused)
	}
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	endpoint := strings.TrimSuffix(apiURL, "/") + "/app-manifests/" + url.PathEscape(code) + "/conversions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return Credentials{}, fmt.Errorf("github.api_url %q: %w", apiURL, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	res, err := client.Do(req)
	if err != nil {
		return Credentials{}, fmt.Errorf("POST %s: %w: %w", endpoint, errUnavailable, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return Credentials{}, fmt.Errorf("read GitHub's answer: %w: %w", errUnavailable, err)
	}
	switch {
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusUnprocessableEntity:
		return Credentials{}, fmt.Errorf("%w (HTTP %d): codes work once and expire after an hour", errCodeRefused, res.StatusCode)
	case res.StatusCode >= 500:
		return Credentials{}, fmt.Errorf("POST %s: %w: HTTP %d: %.200s", endpoint, errUnavailable, res.StatusCode, body)
	case res.StatusCode != http.StatusCreated:
		return Credentials{}, fmt.Errorf("POST %s: GitHub answered HTTP %d: %.200s", endpoint, res.StatusCode, body)
	}
	var conv conversion
	if err := json.Unmarshal(body, &conv); err != nil {
		return Credentials{}, fmt.Errorf("decode GitHub's App: %w", err)
	}
	if conv.ID == 0 || conv.PEM == "" || conv.WebhookSecret == "" || conv.HTMLURL == "" {
		return Credentials{}, fmt.Errorf("GitHub's App has no id, pem, webhook_secret or html_url (id %d)", conv.ID)
	}
	return Credentials{AppID: conv.ID, Slug: conv.Slug, HTMLURL: strings.TrimSuffix(conv.HTMLURL, "/"),
		ClientID: conv.ClientID, ClientSecret: conv.ClientSecret, WebhookSecret: conv.WebhookSecret,
		PrivateKey: []byte(conv.PEM), APIURL: apiURL, CreatedAt: now}, nil
}
