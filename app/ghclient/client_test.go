package ghclient

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func testKey(t *testing.T) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

func TestNew_RefusesABadIdentity(t *testing.T) {
	key := testKey(t)
	for _, tc := range []struct {
		name    string
		cfg     Config
		mention string
		notConf bool
	}{
		{"no app id", Config{PrivateKey: key}, "github.app_id", true},
		{"no private key", Config{AppID: 1}, "github.private_key", true},
		{"private key that is not PEM", Config{AppID: 1, PrivateKey: []byte("ghp_not_a_key")}, "github.private_key: not PEM", false},
		{"PEM that is not a private key", Config{AppID: 1, PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})}, `"CERTIFICATE"`, false},
		{"API URL without a scheme", Config{AppID: 1, PrivateKey: key, APIURL: "api.github.com"}, "github.api_url", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("New: %v; want an error naming %q", err, tc.mention)
			}
			if errors.Is(err, ErrNotConfigured) != tc.notConf {
				t.Fatalf("errors.Is(err, ErrNotConfigured) = %v, want %v", !tc.notConf, tc.notConf)
			}
		})
	}
}

func TestNotConfigured_EveryClientFailsWithTheSettingsToSet(t *testing.T) {
	want := "github app is not configured: set github.app_id and github.private_key (RIPCORD_GITHUB_APP_ID, RIPCORD_GITHUB_PRIVATE_KEY)"
	cc := NotConfigured
	errs := map[string]error{}
	_, errs["NewAppClient"] = cc.NewAppClient()
	_, errs["NewAppV4Client"] = cc.NewAppV4Client()
	_, errs["NewInstallationClient"] = cc.NewInstallationClient(1)
	_, errs["NewInstallationV4Client"] = cc.NewInstallationV4Client(1)
	_, errs["NewTokenSourceClient"] = cc.NewTokenSourceClient(nil)
	_, errs["NewTokenSourceV4Client"] = cc.NewTokenSourceV4Client(nil)
	_, errs["NewTokenClient"] = cc.NewTokenClient("t")
	_, errs["NewTokenV4Client"] = cc.NewTokenV4Client("t")
	for name, err := range errs {
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

func TestAPIURLs(t *testing.T) {
	for _, tc := range []struct {
		name, in, v3, v4 string
	}{
		{"unset is github.com", "", "https://api.github.com/", "https://api.github.com/graphql"},
		{"github.com without the slash", "https://api.github.com", "https://api.github.com/", "https://api.github.com/graphql"},
		{"GitHub Enterprise Server", "https://ghe.example.com/api/v3", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/graphql"},
		{"GitHub Enterprise Server with slash", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/graphql"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v3, v4, err := apiURLs(tc.in)
			if err != nil || v3 != tc.v3 || v4 != tc.v4 {
				t.Fatalf("apiURLs(%q) = %q, %q, %v; want %q, %q", tc.in, v3, v4, err, tc.v3, tc.v4)
			}
		})
	}
}

// The whole way through go-githubapp: the installation token is fetched
// below the stack (not counted), the stack knows the installation from the
// User-Agent go-githubapp sets, and a config read twice costs a 200 and a
// 304.
func TestNew_InstallationClientRevalidatesAndCounts(t *testing.T) {
	counter := &Counter{}
	var tokens atomic.Int32
	srv, ts := serve(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/app/installations/42/access_tokens":
			tokens.Add(1)
			writeJSON(w, http.StatusCreated, `{"token":"ghs_test","expires_at":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`)
		case r.URL.Path == "/repos/acme/api/contents/.github/ripcord.yml":
			w.Header().Set("ETag", `"v1"`)
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			writeJSON(w, http.StatusOK, `{"type":"file","encoding":"base64","content":"cmV0cnk6IDM="}`)
		default:
			writeJSON(w, http.StatusNotFound, `{"message":"Not Found"}`)
		}
	})
	cc, err := New(Config{AppID: 1, PrivateKey: testKey(t), APIURL: ts.URL, Version: "1.2.3", Counter: counter, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}

	for i := 0; i < 2; i++ {
		c, err := cc.NewInstallationClient(42)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := readConfig(t, c); got != "retry: 3" {
			t.Fatalf("read %d: %q", i+1, got)
		}
	}

	last := srv.request(srv.hits() - 1)
	if ua := last.Header.Get("User-Agent"); ua != "ripcord/1.2.3 (installation: 42)" {
		t.Fatalf("User-Agent %q, want ripcord/1.2.3 (installation: 42)", ua)
	}
	if auth := last.Header.Get("Authorization"); auth != "token ghs_test" {
		t.Fatalf("Authorization %q, want the installation token", auth)
	}
	if last.Header.Get("If-None-Match") != `"v1"` {
		t.Fatalf("second read did not revalidate: If-None-Match %q", last.Header.Get("If-None-Match"))
	}
	route := "/repos/{owner}/{repo}/contents/{path}"
	if counter.Count(route, "GET", 200) != 1 || counter.Count(route, "GET", 304) != 1 || counter.Total() != 2 {
		t.Fatalf("counted:\n%s\nwant one 200 and one 304, and not the token request", counter)
	}
	if tokens.Load() != 1 {
		t.Fatalf("%d token requests, want 1 (go-githubapp keeps the token)", tokens.Load())
	}
}
