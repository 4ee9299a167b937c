package repoconfig

import (
	"reflect"
	"strings"
	"testing"
)

const oidcRuleFile = `version: 1
apps:
  checkout:
    environments:
      staging: {cluster: staging-eu}
      prod:
        cluster: prod-eu
        oidc:
          refs: [refs/heads/main, "refs/tags/v*"]
          environments: [production]
      canary:
        oidc:
          environments: [canary, production]
`

func TestOIDCRuleLoads(t *testing.T) {
	cfg := mustLoad(t, []byte(oidcRuleFile))
	prod, _ := cfg.Environment("checkout", "prod")
	want := &OIDCRule{Refs: []string{"refs/heads/main", "refs/tags/v*"}, Environments: []string{"production"}}
	if !reflect.DeepEqual(prod.OIDC, want) {
		t.Errorf("prod's rule = %+v, want %+v", prod.OIDC, want)
	}
	if staging, _ := cfg.Environment("checkout", "staging"); staging.OIDC != nil {
		t.Errorf("staging sets no rule, got %+v", staging.OIDC)
	}
	if canary, _ := cfg.Environment("checkout", "canary"); canary.OIDC == nil || canary.OIDC.Refs != nil {
		t.Errorf("canary's rule leaves refs out, so any ref passes: %+v", canary.OIDC)
	}
}

func TestAdmitOIDC(t *testing.T) {
	cfg := mustLoad(t, []byte(oidcRuleFile))
	tests := []struct {
		name                  string
		app, env, ref, ghEnv  string
		wantKey, wantInReason string
	}{
		{"main in the production environment", "checkout", "prod", "refs/heads/main", "production", "", ""},
		{"a release tag", "checkout", "prod", "refs/tags/v1.4.2", "production", "", ""},
		{"GitHub Environment names ignore case, as GitHub does", "checkout", "prod", "refs/heads/main", "Production", "", ""},
		{"a feature branch is refused on refs", "checkout", "prod", "refs/heads/feature", "production",
			"apps.checkout.environments.prod.oidc.refs", `the token's ref claim is "refs/heads/feature"`},
		{"a branch spelled like main in other case is another branch", "checkout", "prod", "refs/heads/Main", "production",
			"apps.checkout.environments.prod.oidc.refs", `"refs/heads/Main"`},
		{"a pull request's merge ref is refused", "checkout", "prod", "refs/pull/7/merge", "production",
			"apps.checkout.environments.prod.oidc.refs", "refs/heads/main, refs/tags/v*"},
		{"main outside the production environment is refused on environments", "checkout", "prod", "refs/heads/main", "staging",
			"apps.checkout.environments.prod.oidc.environments", `the token's environment claim is "staging"`},
		{"a job with no environment is refused on environments", "checkout", "prod", "refs/heads/main", "",
			"apps.checkout.environments.prod.oidc.environments", "the token has no environment claim"},
		{"an environment without a rule takes any token", "checkout", "staging", "refs/heads/feature", "", "", ""},
		{"a rule without refs takes any ref", "checkout", "canary", "refs/heads/feature", "canary", "", ""},
		{"an app the file does not name takes any token", "payments", "prod", "refs/heads/feature", "", "", ""},
		{"an environment the file does not name takes any token", "checkout", "dev", "refs/heads/feature", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cfg.AdmitOIDC(tt.app, tt.env, tt.ref, tt.ghEnv)
			if tt.wantKey == "" {
				if got != nil {
					t.Fatalf("refused: %v", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("admitted; want a refusal on %s", tt.wantKey)
			}
			if got.Key != tt.wantKey || !strings.Contains(got.Error(), tt.wantInReason) || !strings.Contains(got.Error(), tt.wantKey) {
				t.Errorf("refusal %s: %q; want key %s and a reason with %q", got.Key, got.Error(), tt.wantKey, tt.wantInReason)
			}
		})
	}
}

func TestRefGlobsCountCase(t *testing.T) {
	if !MatchRefGlob("refs/tags/v*", "refs/tags/v1/rc") {
		t.Error("* stops at a slash; it crosses slashes as everywhere in the file")
	}
	if MatchRefGlob("refs/heads/main", "refs/heads/MAIN") {
		t.Error("a ref glob ignored case")
	}
	if !MatchGlob("build*", "Build") {
		t.Error("job-name globs must still ignore case")
	}
}
