package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The App's own endpoints: installation tokens (what go-githubapp's installation
// clients ask for first), installations, the App itself and the manifest conversion
// that ends the App registration flow.

// InstallationID is the installation the fake reports for any repository.
const InstallationID int64 = 1

// ManifestWebhookSecret is the webhook secret the manifest conversion hands out.
const ManifestWebhookSecret = "githubtest-webhook-secret"

// Token is one installation access token the fake issued.
type Token struct {
	InstallationID int64
	Token          string
	JWT            string // the Authorization header the App sent (its JWT, not verified)
	ExpiresAt      time.Time
}

func (s *Server) appHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"POST /app/installations/{installation_id}/access_tokens": s.createToken,
		"GET /app/installations/{installation_id}":                s.getInstallation,
		"GET /repos/{owner}/{repo}/installation":                  s.getInstallation,
		"GET /installation/repositories":                          s.listInstallationRepos,
		"GET /app":                                                s.getApp,
		"POST /app-manifests/{code}/conversions":                  s.convertManifest,
	}
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := atoi64(p["installation_id"])
	tok := Token{
		InstallationID: id,
		Token:          fmt.Sprintf("ghs_githubtest%d_%d", id, len(s.tokens)+1),
		JWT:            r.Header.Get("Authorization"),
		ExpiresAt:      s.nowLocked().Add(time.Hour),
	}
	s.tokens = append(s.tokens, tok)
	writeJSON(w, http.StatusCreated, map[string]any{
		"token": tok.Token, "expires_at": timeJSON(tok.ExpiresAt), "repository_selection": "all",
		"permissions": map[string]any{
			"actions": "write", "checks": "write", "contents": "write", "deployments": "write",
			"issues": "write", "pull_requests": "write", "metadata": "read",
		},
	})
}

// Tokens returns the installation tokens issued so far.
func (s *Server) Tokens() []Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Token(nil), s.tokens...)
}

// TokenInstallation is the installation whose token (Tokens) authorizes r;
// false when r carries none the fake issued.
func (s *Server) TokenInstallation(r *http.Request) (int64, bool) {
	_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		if token != "" && t.Token == token {
			return t.InstallationID, true
		}
	}
	return 0, false
}

// InstallRepository has installation InstallationID list repository: GET
// /installation/repositories answers with the repositories installed so,
// in the order installed. (GET /repos/{owner}/{repo}/installation says
// InstallationID of any repository.)
func (s *Server) InstallRepository(repository string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(repository)
	for _, have := range s.installed {
		if have == r {
			return
		}
	}
	s.installed = append(s.installed, r)
}

// listInstallationRepos answers GET /installation/repositories for the
// installation whose token the request carries: InstallationID has the
// repositories of InstallRepository, another installation none.
func (s *Server) listInstallationRepos(w http.ResponseWriter, r *http.Request, p map[string]string) {
	id, ok := s.TokenInstallation(r)
	if !ok {
		writeError(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	s.mu.Lock()
	all := []map[string]any{}
	if id == InstallationID {
		for _, repo := range s.installed {
			all = append(all, s.repoJSON(repo))
		}
	}
	s.mu.Unlock()
	page := Page(w, r, all)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(all), "repository_selection": "selected", "repositories": page})
}

func (s *Server) getInstallation(w http.ResponseWriter, r *http.Request, p map[string]string) {
	id := InstallationID
	if v, ok := p["installation_id"]; ok {
		id = atoi64(v)
	}
	account := p["owner"]
	if account == "" {
		account = "octo-org"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "app_id": AppID, "app_slug": AppSlug, "target_type": "Organization",
		"target_id": loginID(account), "account": s.userJSON(account), "repository_selection": "all",
		"access_tokens_url": s.apiURL("app/installations/%d/access_tokens", id),
		"repositories_url":  s.apiURL("installation/repositories"),
		"html_url":          htmlURL("organizations/%s/settings/installations/%d", account, id),
		"permissions":       map[string]any{"checks": "write", "contents": "write"},
		"events":            []string{"workflow_run", "check_run", "issue_comment"},
		"created_at":        "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
		"single_file_name": nil,
	})
}

func (s *Server) appJSON() map[string]any {
	return map[string]any{
		"id": AppID, "slug": AppSlug, "node_id": "A_githubtest", "name": "ripcord (githubtest)",
		"owner": s.userJSON("octo-org"), "description": "", "external_url": "https://example.invalid",
		"html_url":   htmlURL("apps/%s", AppSlug),
		"created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
		"permissions": map[string]any{"checks": "write", "contents": "write"},
		"events":      []string{"workflow_run", "check_run", "issue_comment"},
	}
}

func (s *Server) getApp(w http.ResponseWriter, r *http.Request, p map[string]string) {
	writeJSON(w, http.StatusOK, s.appJSON())
}

// convertManifest answers the last step of the manifest flow. As on GitHub a code works
// once.
func (s *Server) convertManifest(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	used := s.codes[p["code"]]
	s.codes[p["code"]] = true
	s.mu.Unlock()
	if used {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	key, err := appKey()
	if err != nil {
		s.t.Errorf("githubtest: %v", err)
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	app := s.appJSON()
	app["client_id"] = "Iv1.githubtest"
	app["client_secret"] = "githubtest-client-secret"
	app["webhook_secret"] = ManifestWebhookSecret
	app["pem"] = string(key)
	writeJSON(w, http.StatusCreated, app)
}

var (
	appKeyOnce sync.Once
	appKeyPEM  []byte
	appKeyErr  error
)

// appKey is the App's private key, made once per test binary (RSA generation is slow).
func appKey() ([]byte, error) {
	appKeyOnce.Do(func() {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			appKeyErr = fmt.Errorf("generate the App's private key: %w", err)
			return
		}
		appKeyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	})
	return appKeyPEM, appKeyErr
}

// AppPrivateKey returns the PEM private key of the fake App (the one the manifest
// conversion hands out), for configuring go-githubapp against the fake.
func AppPrivateKey(t testing.TB) []byte {
	t.Helper()
	key, err := appKey()
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	return key
}
