package e2etest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
)

func itoa(n int) string { return strconv.Itoa(n) }

// Deliver posts a signed delivery with a fresh X-GitHub-Delivery and
// returns that id.
func (e *Env) Deliver(event string, body []byte) string {
	e.T.Helper()
	req := githubtest.NewDelivery(e.T, e.URL+"/api/github/hook", Secret, event, body)
	e.send(req)
	return req.Header.Get("X-GitHub-Delivery")
}

// Redeliver posts the delivery again with the same id, as GitHub's
// "Redeliver" does.
func (e *Env) Redeliver(event, id string, body []byte) {
	e.T.Helper()
	req := githubtest.NewDelivery(e.T, e.URL+"/api/github/hook", Secret, event, body)
	req.Header.Set("X-GitHub-Delivery", id)
	e.send(req)
}

func (e *Env) send(req *http.Request) {
	e.T.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("e2etest: deliver: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		e.T.Fatalf("e2etest: delivery answered %d: %s", resp.StatusCode, b)
	}
}

// Do calls the server's API with the api token and returns the status and body.
func (e *Env) Do(method, path, contentType string, body []byte) (int, []byte) {
	e.T.Helper()
	req, err := http.NewRequest(method, e.URL+path, bytes.NewReader(body))
	if err != nil {
		e.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+Token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("e2etest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Install delivers installation created for repository, so the server
// accepts facts from its workflows.
func (e *Env) Install(repository string) {
	e.T.Helper()
	// GitHub lists the repository among the installation's: ripcord
	// records those GitHub says the installation has, not the payload's.
	e.GitHub.InstallRepository(repository)
	body := Edit(e.T, githubtest.LoadPayload(e.T, "installation", "created.payload.json"), func(m map[string]any) {
		m["installation"].(map[string]any)["id"] = githubtest.InstallationID
		repo := m["repositories"].([]any)[0].(map[string]any)
		repo["full_name"], repo["name"] = repository, name(repository)
	})
	e.Deliver("installation", body)
	e.WaitFor("the installation to be recorded", 10*time.Second, func() bool {
		return e.Int(`SELECT COUNT(*) FROM installation_repositories WHERE repository = $1`, repository) == 1
	})
}

// Fact posts a task fact as the bundled action does, with a GitHub Actions
// OIDC token of the fact's repository and run.
func (e *Env) Fact(fact map[string]any) {
	e.T.Helper()
	repo := fact["repository"].(string)
	tok := e.Issuer.Token(e.T, map[string]any{"repository": repo, "run_id": fmt.Sprint(fact["workflow_run_id"]),
		"sub": "repo:" + repo + ":ref:refs/heads/main"})
	body, _ := json.Marshal(fact)
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/api/v1/facts", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("e2etest: post fact: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.T.Fatalf("e2etest: post fact answered %d: %s", resp.StatusCode, b)
	}
}

// Edit decodes a payload, lets edit change it, and encodes it again.
func Edit(t testing.TB, body []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("e2etest: decode payload: %v", err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("e2etest: encode payload: %v", err)
	}
	return out
}
