package githubtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// ProtectionRule describes a deployment_protection_rule "requested" delivery: GitHub asks
// the App whether a job waiting on an environment may proceed.
type ProtectionRule struct {
	Repo           string // "owner/name"; default: the example payloads' Codertocat/Hello-World
	Environment    string // default "production"
	Event          string // the event that started the run; default "push"
	RunID          int64  // the waiting workflow run; default 1
	APIURL         string // base of deployment_callback_url, e.g. Server.URL(); default https://api.github.com/
	InstallationID int64  // default 1
	// SHA and Ref are in GitHub's own (newer) description of the event but not in
	// Octokit's schema, which forbids extra keys; they are sent only when set. SHA is also
	// the deployment's sha.
	SHA, Ref string
}

// BuildDeploymentProtectionRule returns a deployment_protection_rule payload. Octokit
// publishes no example of this event, so it is assembled from the parts of GitHub's own
// deployment example (deployment, repository, sender) as the event's schema lays out.
func BuildDeploymentProtectionRule(t testing.TB, rule ProtectionRule) []byte {
	t.Helper()
	rule = rule.withDefaults()
	var example map[string]any
	if err := json.Unmarshal(LoadPayload(t, "deployment", "with-installation.payload.json"), &example); err != nil {
		t.Fatalf("githubtest: decode deployment example: %v", err)
	}
	deployment := asMap(example["deployment"])
	repository := asMap(example["repository"])
	if deployment == nil || repository == nil || example["sender"] == nil {
		t.Fatalf("githubtest: the deployment example lacks deployment, repository or sender")
	}
	deployment["environment"] = rule.Environment
	deployment["original_environment"] = rule.Environment
	if rule.SHA != "" {
		deployment["sha"] = rule.SHA
	}
	if rule.Ref != "" {
		deployment["ref"] = rule.Ref
	}
	owner, name, _ := strings.Cut(rule.Repo, "/")
	repository["name"] = name
	repository["full_name"] = rule.Repo
	if o := asMap(repository["owner"]); o != nil {
		o["login"] = owner
	}
	payload := map[string]any{
		"action":                  "requested",
		"environment":             rule.Environment,
		"event":                   rule.Event,
		"deployment_callback_url": fmt.Sprintf("%srepos/%s/actions/runs/%d/deployment_protection_rule", rule.APIURL, rule.Repo, rule.RunID),
		"deployment":              deployment,
		"repository":              repository,
		"sender":                  example["sender"],
		"installation":            map[string]any{"id": rule.InstallationID, "node_id": fmt.Sprintf("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u%d", rule.InstallationID)},
	}
	if rule.SHA != "" {
		payload["sha"] = rule.SHA
	}
	if rule.Ref != "" {
		payload["ref"] = rule.Ref
	}
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatalf("githubtest: encode deployment_protection_rule payload: %v", err)
	}
	return body
}

func (r ProtectionRule) withDefaults() ProtectionRule {
	if r.Repo == "" {
		r.Repo = "Codertocat/Hello-World"
	}
	if r.Environment == "" {
		r.Environment = "production"
	}
	if r.Event == "" {
		r.Event = "push"
	}
	if r.RunID == 0 {
		r.RunID = 1
	}
	if r.APIURL == "" {
		r.APIURL = "https://api.github.com/"
	}
	if !strings.HasSuffix(r.APIURL, "/") {
		r.APIURL += "/"
	}
	if r.InstallationID == 0 {
		r.InstallationID = 1
	}
	return r
}
