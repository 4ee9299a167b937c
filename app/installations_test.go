package app

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// suspendedOnGitHub is what the fake GitHub says of the installation's
// suspension, and of which installation has which repository.
type suspendedOnGitHub struct {
	mu        sync.Mutex
	suspended bool
	// repos are the repositories installed, with their installation; the
	// App is installed on no other.
	repos map[string]int64
}

func (s *suspendedOnGitHub) set(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.suspended = v
}

// install has installation id have repository on GitHub; id 0 removes it.
func (s *suspendedOnGitHub) install(repository string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repos == nil {
		s.repos = map[string]int64{}
	}
	if id == 0 {
		delete(s.repos, repository)
		return
	}
	s.repos[repository] = id
}

// startWithSuspension starts the server as a configured App against a fake
// GitHub whose GET /app/installations/{installation_id}, GET
// /repos/{owner}/{repo}/installation and GET /installation/repositories
// answer from gh, and which gives no installation token while gh says
// suspended.
func startWithSuspension(t *testing.T, dbURL string) (*testServer, *githubtest.Server, *suspendedOnGitHub) {
	t.Helper()
	fake := githubtest.NewServer(t)
	gh := &suspendedOnGitHub{}
	fake.Handle("GET /app/installations/{installation_id}", gh.serve)
	fake.Handle("GET /repos/{owner}/{repo}/installation", gh.serveRepository)
	fake.Handle("GET /installation/repositories", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		id, ok := fake.TokenInstallation(r)
		if !ok {
			t.Errorf("GET /installation/repositories without an installation token (Authorization %.12q…)", r.Header.Get("Authorization"))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		gh.serveList(w, r, id)
	})
	token := fake.Default("POST /app/installations/{installation_id}/access_tokens")
	fake.Handle("POST /app/installations/{installation_id}/access_tokens", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		gh.mu.Lock()
		suspended := gh.suspended
		gh.mu.Unlock()
		if suspended {
			// GitHub gives a suspended installation no token.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message": "This installation has been suspended",
				"documentation_url": "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"}`))
			return
		}
		token(w, r, p)
	})
	ts := startServerWith(t, dbURL, Options{}, func(c *config.Config) {
		c.GitHub.AppID, c.GitHub.PrivateKey, c.GitHub.APIURL = githubtest.AppID, githubtest.AppPrivateKey(t), fake.URL()
	})
	return ts, fake, gh
}

// serve answers GET /app/installations/{installation_id} as GitHub does,
// with suspended_at set while the installation is suspended.
func (s *suspendedOnGitHub) serve(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	s.writeInstallation(w, p["installation_id"])
}

// serveRepository answers GET /repos/{owner}/{repo}/installation as GitHub
// does: the installation that has the repository, or 404 when none has.
func (s *suspendedOnGitHub) serveRepository(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	s.mu.Lock()
	id, ok := s.repos[p["owner"]+"/"+p["repo"]]
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": "Not Found",
			"documentation_url": "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app"})
		return
	}
	s.writeInstallation(w, fmt.Sprint(id))
}

// serveList answers GET /installation/repositories for installation id as
// GitHub does: its repositories, by name, a page at a time.
func (s *suspendedOnGitHub) serveList(w http.ResponseWriter, r *http.Request, id int64) {
	s.mu.Lock()
	var names []string
	for name, of := range s.repos {
		if of == id {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	sort.Strings(names)
	all := []map[string]any{}
	for i, name := range names {
		owner, repo, _ := strings.Cut(name, "/")
		all = append(all, map[string]any{"id": 1000 + i, "node_id": fmt.Sprintf("R_%d", 1000+i), "name": repo,
			"full_name": name, "private": false, "owner": map[string]any{"login": owner, "id": 21031067, "type": "User"},
			"html_url": "https://github.com/" + name, "url": "https://api.github.com/repos/" + name})
	}
	page := githubtest.Page(w, r, all)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"total_count": len(all), "repository_selection": "selected", "repositories": page})
}

func (s *suspendedOnGitHub) writeInstallation(w http.ResponseWriter, id string) {
	s.mu.Lock()
	var suspendedAt any
	if s.suspended {
		suspendedAt = "2021-04-29T02:32:50Z"
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": json.Number(id), "app_id": githubtest.AppID, "app_slug": "ripcord",
		"target_type": "User", "target_id": 21031067, "repository_selection": "selected",
		"account":     map[string]any{"login": "Codertocat", "id": 21031067, "type": "User"},
		"permissions": map[string]any{"checks": "write"}, "events": []string{"workflow_run"},
		"created_at": "2021-04-29T02:30:12Z", "updated_at": "2021-04-29T02:32:50Z",
		"suspended_at": suspendedAt, "suspended_by": nil, "single_file_name": nil,
		"access_tokens_url": "https://api.github.com/app/installations/" + id + "/access_tokens",
		"repositories_url":  "https://api.github.com/installation/repositories",
		"html_url":          "https://github.com/settings/installations/" + id,
	})
}

func (ts *testServer) installationSuspended(t *testing.T, id int64) bool {
	t.Helper()
	var suspended bool
	if err := ts.db.Read.QueryRow(`SELECT suspended FROM installations WHERE id = $1`, id).Scan(&suspended); err != nil {
		t.Fatalf("installation %d: %v", id, err)
	}
	return suspended
}

// deliverSettled delivers an installation event and waits until it is
// processed.
func (ts *testServer) deliverSettled(t *testing.T, event, id string, body []byte) {
	t.Helper()
	if code, resp := ts.deliver(t, event, id, body, githubtest.Sign(testSecret, body)); code != 202 {
		t.Fatalf("%s: %d %s", id, code, resp)
	}
	ts.waitSettled(t)
	if d := ts.delivery(t, id); d.State != DeliveryProcessed {
		t.Fatalf("%s ended %s (%s), want processed", id, d.State, d.LastError)
	}
}

// GitHub does not promise delivery order, and an installation's updated_at
// does not move between suspend and unsuspend: an old unsuspend delivered
// after a newer suspend (or the reverse) cannot be told by its payload.
// ripcord stores what GitHub says now (GET /app/installations/{id}, as
// the App), not the event's action.
func TestSuspensionIsWhatGitHubSaysNotTheLateEvent(t *testing.T) {
	t.Parallel()
	suspend := githubtest.LoadPayload(t, "installation", "suspend.payload.json")
	unsuspend := githubtest.LoadPayload(t, "installation", "unsuspend.payload.json")
	const id = 16598467 // both payloads'
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, fake, gh := startWithSuspension(t, dbURL)

		gh.set(true)
		ts.deliverSettled(t, "installation", "suspend-1", suspend)
		if !ts.installationSuspended(t, id) {
			t.Error("after suspend, with GitHub saying suspended: the installation is active")
		}
		// An unsuspend from before the suspend arrives late (a redelivery).
		ts.deliverSettled(t, "installation", "unsuspend-old", unsuspend)
		if !ts.installationSuspended(t, id) {
			t.Error("an old unsuspend delivered after the suspend made the installation active; GitHub says suspended")
		}
		if ok, err := installedOn(context.Background(), ts.db.Read, "Codertocat/Hello-World"); err != nil || ok {
			t.Errorf("installedOn a repository of the suspended installation = %v (err %v), want false", ok, err)
		}

		// And the reverse: unsuspended on GitHub, an old suspend comes late.
		gh.set(false)
		ts.deliverSettled(t, "installation", "unsuspend-2", unsuspend)
		ts.deliverSettled(t, "installation", "suspend-old", suspend)
		if ts.installationSuspended(t, id) {
			t.Error("an old suspend delivered after the unsuspend suspended the installation; GitHub says active")
		}

		// Each suspend and unsuspend read the installation, as the App,
		// with a request GitHub's description allows.
		var reads []githubtest.Recorded
		for _, r := range fake.Requests() {
			if r.Invalid != "" {
				t.Errorf("%s %s: GitHub would reject it: %s", r.Method, r.Path, r.Invalid)
			}
			if r.Route == "/app/installations/{installation_id}" {
				reads = append(reads, r)
			}
		}
		if len(reads) != 4 {
			t.Fatalf("%d reads of the installation, want one per suspend and unsuspend (4)", len(reads))
		}
		for _, r := range reads {
			if r.Method != http.MethodGet || r.Path != fmt.Sprintf("/app/installations/%d", id) {
				t.Errorf("read %s %s, want GET /app/installations/%d", r.Method, r.Path, id)
			}
			if err := checkAppJWT(t, r.Header.Get("Authorization")); err != nil {
				t.Errorf("read of the installation not authenticated as the App: %v", err)
			}
		}
		if n := len(fake.Tokens()); n != 0 {
			t.Errorf("%d installation tokens asked for; reading an installation needs the App's JWT only", n)
		}
	})
}

// checkAppJWT checks that an Authorization header is "Bearer" and a JWT
// issued by the fake App and signed (RS256) with its private key.
func checkAppJWT(t *testing.T, header string) error {
	t.Helper()
	token, ok := strings.CutPrefix(header, "Bearer ")
	parts := strings.Split(token, ".")
	if !ok || len(parts) != 3 {
		return fmt.Errorf("authorization %.20q… is not a bearer JWT", header)
	}
	block, _ := pem.Decode(githubtest.AppPrivateKey(t))
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
		return fmt.Errorf("not signed with the App's key: %w", err)
	}
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	var c struct {
		Iss any `json:"iss"`
	}
	if err := json.Unmarshal(claims, &c); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	if fmt.Sprint(c.Iss) != fmt.Sprint(githubtest.AppID) {
		return fmt.Errorf("issuer %v, want the App %d", c.Iss, githubtest.AppID)
	}
	return nil
}

// When GitHub cannot be reached, the event's action is applied, as
// before, and the log says so.
func TestSuspensionFallsBackToTheEventWhenGitHubIsUnreachable(t *testing.T) {
	t.Parallel()
	suspend := githubtest.LoadPayload(t, "installation", "suspend.payload.json")
	unsuspend := githubtest.LoadPayload(t, "installation", "unsuspend.payload.json")
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		logs := &syncBuffer{}
		ts := startServerWith(t, dbURL, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}, func(c *config.Config) {
			// Nothing listens on port 1 of loopback.
			c.GitHub.AppID, c.GitHub.PrivateKey, c.GitHub.APIURL = githubtest.AppID, githubtest.AppPrivateKey(t), "http://127.0.0.1:1/"
		})
		ts.deliverSettled(t, "installation", "suspend-1", suspend)
		if !ts.installationSuspended(t, 16598467) {
			t.Error("suspend with GitHub unreachable: the installation is active, want the event's suspend applied")
		}
		ts.deliverSettled(t, "installation", "unsuspend-1", unsuspend)
		if ts.installationSuspended(t, 16598467) {
			t.Error("unsuspend with GitHub unreachable: the installation is suspended, want the event's unsuspend applied")
		}
		if got := logs.String(); !contains(got, "could not read the installation from GitHub") || !contains(got, "installation=16598467") {
			t.Errorf("the log does not say GitHub could not be reached and the event was applied:\n%s", got)
		}
	})
}

// withInstallation is payload (an installation or installation_repositories
// event) made about the installation of the suspend example, as GitHub
// sent it before the suspension: suspended_at null.
func withInstallation(t *testing.T, payload, suspend []byte) []byte {
	t.Helper()
	var ev, susp map[string]any
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(suspend, &susp); err != nil {
		t.Fatal(err)
	}
	inst := susp["installation"].(map[string]any)
	inst["suspended_at"], inst["suspended_by"] = nil, nil
	ev["installation"] = inst
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The other events that carry an installation cannot be ordered by their
// payload either: an installation_repositories or created event sent
// before a suspend, delivered after it, says suspended_at null. It must
// not make the suspended installation active: ripcord stores what GitHub
// says now for them too.
func TestALateEventDoesNotUndoASuspension(t *testing.T) {
	t.Parallel()
	suspend := githubtest.LoadPayload(t, "installation", "suspend.payload.json")
	added := withInstallation(t, githubtest.LoadPayload(t, "installation_repositories", "added.payload.json"), suspend)
	created := withInstallation(t, githubtest.LoadPayload(t, "installation", "created.payload.json"), suspend)
	const id = 16598467
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts, fake, gh := startWithSuspension(t, dbURL)
		gh.set(true)
		gh.install("Codertocat/Space", id)       // the added event's, still installed
		gh.install("Codertocat/Hello-World", id) // the created event's, still installed
		ts.deliverSettled(t, "installation", "suspend-1", suspend)
		ts.deliverSettled(t, "installation_repositories", "added-old", added)
		if !ts.installationSuspended(t, id) {
			t.Error("an installation_repositories event from before the suspend made the installation active; GitHub says suspended")
		}
		ts.deliverSettled(t, "installation", "created-old", created)
		if !ts.installationSuspended(t, id) {
			t.Error("a created event from before the suspend made the installation active; GitHub says suspended")
		}
		// The repositories are recorded all the same.
		var n int
		if err := ts.db.Read.QueryRow(`SELECT COUNT(*) FROM installation_repositories WHERE installation_id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Error("the late events' repositories were not recorded")
		}
		for _, r := range fake.Requests() {
			if r.Invalid != "" {
				t.Errorf("%s %s: GitHub would reject it: %s", r.Method, r.Path, r.Invalid)
			}
		}
		if got := fake.Count(http.MethodGet, "/app/installations/{installation_id}"); got != 3 {
			t.Errorf("%d reads of the installation, want one per event (3)", got)
		}
	})
}
