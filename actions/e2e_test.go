package actions

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
	"github.com/ripcord/ripcord/internal/testserve"
)

const (
	e2eSecret = "e2e-webhook-secret"
	e2eToken  = "e2e-api-token"
)

// realServer runs `ripcord serve` in process on loopback, trusting issuer's
// tokens for the audience of its own URL, as the action's default audience is.
func realServer(t *testing.T, issuer *oidctest.Issuer) string {
	t.Helper()
	return testserve.Start(t, func(cfg *config.Config, url string) {
		cfg.PublicURL, cfg.APIToken = url, e2eToken
		cfg.GitHub.WebhookSecrets = []string{e2eSecret}
		cfg.OIDC.Issuer, cfg.OIDC.Audience = issuer.URL(), url
	})
}

// installOn delivers a signed installation event naming repo, as GitHub does
// when the App is installed, and waits until the server has recorded it.
func installOn(t *testing.T, url, repo string) {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(githubtest.LoadPayload(t, "installation", "created.payload.json"), &ev); err != nil {
		t.Fatal(err)
	}
	ev["repositories"] = []any{map[string]any{"id": 1, "node_id": "R_1", "name": strings.Split(repo, "/")[1], "full_name": repo, "private": false}}
	body, _ := json.Marshal(ev)
	req := githubtest.NewDelivery(t, url+"/api/github/hook", e2eSecret, "installation", body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("installation delivery: %v %v", err, resp)
	}
	resp.Body.Close()
	id := req.Header.Get("X-GitHub-Delivery")
	deadline := time.Now().Add(30 * time.Second)
	for {
		var d struct{ State string }
		get(t, url+"/api/v1/deliveries/"+id, &d)
		if d.State == "processed" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("installation delivery still %q", d.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, url string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = json.NewDecoder(bytes.NewReader(b)).Decode(out)
	return resp.StatusCode
}

// TestActionAgainstARealServer runs the action's script with a fake runner
// environment whose token endpoint hands out real OIDC tokens from a loopback
// issuer, against a real `ripcord serve`: the first fact opens the release,
// the second makes it healthy.
func TestActionAgainstARealServer(t *testing.T) {
	t.Parallel()
	issuer := oidctest.NewIssuer(t)
	url := realServer(t, issuer)
	installOn(t, url, "acme/checkout")
	f := newFakes(t)
	token := issuer.Token(t, map[string]any{"repository": "acme/checkout"}, oidctest.WithAudience(url))
	f.token.script(reply{200, `{"count":1,"value":"` + token + `"}`})

	inputs := map[string]string{"server": url + "/", "app": "checkout", "environment": "prod", "cluster": "prod-eu",
		"release-id": "c-77:prod-eu/prod", "image": "registry.example/shop/checkout:v77", "version": "v77", "fail-on-error": "true"}
	for _, step := range []struct{ status, wantState string }{{"in_progress", "progressing"}, {"success", "healthy"}} {
		inputs["status"] = step.status
		r := runAction(t, f, inputs, map[string]string{"GITHUB_RUN_ATTEMPT": map[string]string{"in_progress": "1", "success": "1"}[step.status]})
		if r.code != 0 {
			t.Fatalf("status %s: the action failed (%d)\n%s\n%s", step.status, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.outputs, "state="+step.wantState) {
			t.Errorf("status %s: outputs %q, want state=%s", step.status, r.outputs, step.wantState)
		}
		var rec struct{ State, Repository string }
		if code := get(t, url+"/api/v1/releases/c-77:prod-eu%2Fprod", &rec); code != 200 || rec.State != step.wantState {
			t.Errorf("status %s: release %d %+v, want %s", step.status, code, rec, step.wantState)
		}
	}
	if got := f.token.got(); len(got) != 2 || strings.Join(got[0].Query["audience"], "") != url {
		t.Errorf("token requests %+v, want two for audience %s", got, url)
	}
}

// TestReRunsPostDistinctFacts: a re-run of the deploy job (a new run
// attempt) is a new fact, and posting the same attempt's status again is
// recognised as a duplicate, against a real server.
func TestReRunsPostDistinctFacts(t *testing.T) {
	t.Parallel()
	issuer := oidctest.NewIssuer(t)
	url := realServer(t, issuer)
	installOn(t, url, "acme/checkout")
	f := newFakes(t)
	token := issuer.Token(t, map[string]any{"repository": "acme/checkout"}, oidctest.WithAudience(url))
	f.token.script(reply{200, `{"count":1,"value":"` + token + `"}`})
	inputs := map[string]string{"server": url, "app": "checkout", "environment": "prod", "cluster": "prod-eu",
		"release-id": "c-78:prod-eu/prod", "image": "registry.example/shop/checkout:v78", "fail-on-error": "true"}

	ids := map[string]string{}
	for _, step := range []struct{ attempt, status, outcome string }{
		{"1", "in_progress", "opened"},
		{"1", "failed", "applied"},
		{"2", "in_progress", "applied"},
		{"2", "in_progress", "duplicate"}, // the same post again, e.g. a re-run step
		{"2", "success", "applied"},
	} {
		r := runAction(t, f, with(inputs, "status", step.status), map[string]string{"GITHUB_RUN_ATTEMPT": step.attempt})
		if r.code != 0 {
			t.Fatalf("attempt %s %s: exit %d\n%s", step.attempt, step.status, r.code, r.stdout)
		}
		if !strings.Contains(r.outputs, "outcome="+step.outcome+"\n") {
			t.Errorf("attempt %s %s: outputs %q, want outcome=%s", step.attempt, step.status, r.outputs, step.outcome)
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(r.outputs, "fact-id="), "\n")
		key := step.attempt + "/" + step.status
		if prev, seen := ids[key]; seen && prev != id {
			t.Errorf("the same attempt and status got fact ids %s and %s", prev, id)
		}
		ids[key] = id
	}
	distinct := map[string]bool{}
	for _, id := range ids {
		distinct[id] = true
	}
	if len(distinct) != 4 {
		t.Errorf("fact ids %v: want 4 distinct facts (attempt 1 and 2, each in_progress and a result)", ids)
	}
}

// TestRefusalsReachTheWorkflowAuthor: against a real server, a workflow
// whose server input is not ripcord's public_url (so its token is for
// another audience), or whose repository has no App installed, gets a
// warning that says what to do, and the step succeeds.
func TestRefusalsReachTheWorkflowAuthor(t *testing.T) {
	t.Parallel()
	issuer := oidctest.NewIssuer(t)
	url := realServer(t, issuer)
	installOn(t, url, "acme/checkout")
	other := strings.Replace(url, "127.0.0.1", "localhost", 1)
	cases := []struct {
		name, server, repo string
		want               []string
	}{
		{"server input not the public_url", other, "acme/checkout", []string{
			"HTTP 401", `request the token for audience "` + url + `"`, // unescaped from the answer's JSON
			`The token was requested for audience "` + other + `"`, "fail-on-error is false"}},
		{"a repository without the App", url, "acme/payments", []string{
			"HTTP 403", "the ripcord App is not installed on acme/payments: install it there", "(field repository). "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakes(t)
			token := issuer.Token(t, map[string]any{"repository": tc.repo}, oidctest.WithAudience(strings.TrimSuffix(tc.server, "/")))
			f.token.script(reply{200, `{"count":1,"value":"` + token + `"}`})
			in := map[string]string{"server": tc.server, "app": "checkout", "environment": "prod", "cluster": "prod-eu",
				"release-id": "c-79:prod-eu/prod", "status": "in_progress"}
			r := runAction(t, f, in, map[string]string{"GITHUB_REPOSITORY": tc.repo})
			checkFailed(t, r, 0, "warning", tc.want...)
			// ripcord's JSON is shown by its message, not as the body it came in.
			if msg, _ := annotation(r.stdout, "warning"); strings.Contains(msg, `\"`) || strings.Contains(msg, `"error"`) {
				t.Errorf("the refusal is shown as raw JSON: %q", msg)
			}
		})
	}
}
