package setup_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// installWebhook sends GitHub's installation created webhook for
// repository, signed with secret, and returns the status ripcord answers.
func (e *env) installWebhook(secret, repository string) int {
	e.t.Helper()
	e.gh.InstallRepository(repository) // GitHub lists it among the installation's
	var m map[string]any
	if err := json.Unmarshal(githubtest.LoadPayload(e.t, "installation", "created.payload.json"), &m); err != nil {
		e.t.Fatal(err)
	}
	m["installation"].(map[string]any)["id"] = githubtest.InstallationID
	repo := m["repositories"].([]any)[0].(map[string]any)
	_, name, _ := strings.Cut(repository, "/")
	repo["full_name"], repo["name"] = repository, name
	body, _ := json.Marshal(m)
	res, err := http.DefaultClient.Do(githubtest.NewDelivery(e.t, e.url+"/api/github/hook", secret, "installation", body))
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// After registering the App the admin installs it on GitHub, and GitHub
// sends them back to the App's setup URL (/setup) with the installation.
// That page says the App is installed, whether ripcord has received
// GitHub's webhook about it (and where to look on GitHub when it has not:
// the webhook URL and the App's recent deliveries), and what to do next;
// once the webhook arrived it says so. An installation an organisation
// owner must approve first is told apart.
func TestTheAdminBackFromInstallingIsToldWhatIsNext(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, false)
		_, page, _ := e.get(e.setupPage(""))
		fs := forms(t, page)
		if len(fs) != 1 {
			t.Fatalf("GET /setup: %d forms, want the personal one:\n%s", len(fs), page)
		}
		status, _, hdr := e.get("/setup/callback?code=fresh&state=" + fs[0].state())
		install := hdr.Get("Location")
		if status != http.StatusSeeOther || !strings.HasSuffix(install, "/installations/new") {
			t.Fatalf("callback: HTTP %d to %q, want 303 to the App's install page", status, install)
		}

		// GitHub's return after the installation, before its webhook arrived.
		back := "/setup?installation_id=" + strconv.FormatInt(githubtest.InstallationID, 10) + "&setup_action=install"
		status, page, _ = e.get(back)
		if status != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d, want 200:\n%s", back, status, page)
		}
		for _, want := range []string{"installation <code>1</code>", "has not received GitHub's webhook",
			"<code>" + e.url + "/api/github/hook</code>", "Recent Deliveries", "public_url", ".github/ripcord.yml"} {
			if !strings.Contains(page, want) {
				t.Errorf("back from installing, before the webhook: the page does not say %q:\n%s", want, page)
			}
		}
		if strings.Contains(page, ">Install the App</a>") {
			t.Errorf("back from installing: the page still asks to install the App:\n%s", page)
		}

		if got := e.installWebhook(githubtest.ManifestWebhookSecret, "octo-org/shop"); got != http.StatusAccepted {
			t.Fatalf("the installation webhook: HTTP %d, want 202", got)
		}
		waitFor(t, "the page to say the installation's webhook arrived", func() bool {
			_, page, _ = e.get(back)
			return strings.Contains(page, "has received GitHub's webhook")
		})
		if !strings.Contains(page, "recorded 1 repository") || strings.Contains(page, "Recent Deliveries") {
			t.Errorf("once the webhook arrived the page does not say so (and only that):\n%s", page)
		}

		// An organisation owner must approve it first.
		_, page, _ = e.get("/setup?setup_action=request")
		if !strings.Contains(page, "approve") || strings.Contains(page, "has not received") {
			t.Errorf("an installation requested for approval: the page does not say an owner must approve it:\n%s", page)
		}
		// Without GitHub's parameters the page is the App's status, as before.
		_, page, _ = e.get("/setup?installation_id=x&setup_action=install")
		if !strings.Contains(page, ">Install the App</a>") || strings.Contains(page, "Installed") {
			t.Errorf("GET /setup with an installation id that is no number: want the plain status page:\n%s", page)
		}
	})
}
