package githubtest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-github/v66/github"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// octokitSchema compiles one definition of Octokit's bundled webhook schema.
func octokitSchema(t *testing.T, definition string) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(SharedDir(t), "github", "webhooks", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	// The library's uri-template check rejects RFC 6570 expressions such as {/branch}
	// that fill every GitHub URL template; it is the library, not the payload, that errs.
	c.RegisterFormat(&jsonschema.Format{Name: "uri-template", Validate: func(any) error { return nil }})
	if err := c.AddResource("file:///schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("file:///schema.json#/definitions/" + definition)
	if err != nil {
		t.Fatalf("compile %s: %v", definition, err)
	}
	return sch
}

func TestProtectionRuleMatchesOctokitsSchema(t *testing.T) {
	sch := octokitSchema(t, "deployment_protection_rule$requested")
	cases := []struct {
		name  string
		rule  ProtectionRule
		valid bool
	}{
		{"defaults", ProtectionRule{}, true},
		{"a repository and environment of the test's", ProtectionRule{
			Repo: "acme/shop", Environment: "prod-eu", Event: "workflow_dispatch", RunID: 987654321,
			APIURL: "http://127.0.0.1:4010", InstallationID: 77,
		}, true},
		// Octokit's schema forbids keys it does not list; GitHub's newer one has sha and ref.
		{"sha and ref are beyond Octokit's schema", ProtectionRule{SHA: "abc", Ref: "main"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := BuildDeploymentProtectionRule(t, c.rule)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			err = sch.Validate(inst)
			if c.valid && err != nil {
				t.Errorf("payload breaks Octokit's schema: %v", err)
			}
			if !c.valid && err == nil {
				t.Errorf("payload passed Octokit's schema")
			}
		})
	}
}

func TestProtectionRuleWithSHAMatchesGitHubsSchema(t *testing.T) {
	spec := LoadSpec(t)
	schema := spec.Schema("webhook-deployment-protection-rule-requested")
	if schema == nil {
		t.Fatal("GitHub's description has no webhook-deployment-protection-rule-requested schema")
	}
	body := BuildDeploymentProtectionRule(t, ProtectionRule{SHA: "0123456789abcdef0123456789abcdef01234567", Ref: "refs/heads/main"})
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		t.Fatal(err)
	}
	if err := schema.VisitJSON(value, openapi3.MultiErrors()); err != nil {
		t.Errorf("payload breaks GitHub's schema: %v", describe(err))
	}
}

func TestProtectionRuleReadsBackThroughGoGitHub(t *testing.T) {
	body := BuildDeploymentProtectionRule(t, ProtectionRule{
		Repo: "acme/shop", Environment: "prod", RunID: 42, APIURL: "http://127.0.0.1:9/", InstallationID: 7,
	})
	event, err := github.ParseWebHook("deployment_protection_rule", body)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := event.(*github.DeploymentProtectionRuleEvent)
	if !ok {
		t.Fatalf("parsed as %T", event)
	}
	checks := []struct{ field, got, want string }{
		{"action", e.GetAction(), "requested"},
		{"environment", e.GetEnvironment(), "prod"},
		{"deployment_callback_url", e.GetDeploymentCallbackURL(), "http://127.0.0.1:9/repos/acme/shop/actions/runs/42/deployment_protection_rule"},
		{"repository.full_name", e.GetRepo().GetFullName(), "acme/shop"},
		{"repository.owner.login", e.GetRepo().GetOwner().GetLogin(), "acme"},
		{"deployment.environment", e.GetDeployment().GetEnvironment(), "prod"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	if e.GetInstallation().GetID() != 7 {
		t.Errorf("installation.id = %d, want 7", e.GetInstallation().GetID())
	}
}
