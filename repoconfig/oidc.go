package repoconfig

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// OIDCRule restricts which workflows' GitHub Actions OIDC tokens may post
// facts, open releases and post its rollouts' probe results for one
// environment (POST /api/v1/facts, POST /api/v1/releases and
// POST /api/v1/rollouts/{id}/probes). Without it any workflow of the
// repository may, from any branch, which lets a contributor's feature
// branch fail prod and start its recovery, or pass its waves' gates. A list left out restricts nothing; a token must
// satisfy every list that is given. The api_token is never restricted.
type OIDCRule struct {
	// Refs are globs (CompileRefGlob) the token's ref claim must match one of.
	Refs []string
	// Environments are GitHub Environments the token's environment claim
	// must be one of, compared without regard to case, as GitHub names them.
	Environments []string
}

// OIDCRefusal says which claim of a token an environment's rule refused.
type OIDCRefusal struct {
	Key     string   // the rule's key, e.g. apps.checkout.environments.prod.oidc.refs
	Claim   string   // the token's claim it checks: ref or environment
	Value   string   // the token's value of it; "" when the token has none
	Allowed []string // what the rule allows, as written
}

func (r *OIDCRefusal) Error() string {
	got := fmt.Sprintf("the token's %s claim is %q", r.Claim, r.Value)
	if r.Value == "" {
		got = fmt.Sprintf("the token has no %s claim (the job names no GitHub Environment)", r.Claim)
	}
	return fmt.Sprintf("%s, which %s does not allow (it allows %s)", got, r.Key, strings.Join(r.Allowed, ", "))
}

// AdmitOIDC decides whether a workflow token whose ref and environment
// claims are ref and environment may post for app in env: nil when it may,
// also when the file has no rule for them (or no such app or environment),
// else the first claim the rule refuses.
func (c *Config) AdmitOIDC(app, env, ref, environment string) *OIDCRefusal {
	e, ok := c.Environment(app, env)
	if !ok || e.OIDC == nil {
		return nil
	}
	key := func(k string) string { return join(join(join(join("apps", app), "environments"), env), "oidc."+k) }
	r := e.OIDC
	if r.Refs != nil && !anyRef(r.Refs, ref) {
		return &OIDCRefusal{Key: key("refs"), Claim: "ref", Value: ref, Allowed: r.Refs}
	}
	if r.Environments != nil && (environment == "" || !containsFold(r.Environments, environment)) {
		return &OIDCRefusal{Key: key("environments"), Claim: "environment", Value: environment, Allowed: r.Environments}
	}
	return nil
}

func anyRef(globs []string, ref string) bool {
	for _, g := range globs {
		if MatchRefGlob(g, ref) {
			return true
		}
	}
	return false
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

var oidcKeys = []string{"refs", "environments"}

// refPattern is what a ref glob must start with to ever match: GitHub's
// ref claim is always a full ref (refs/heads/…, refs/tags/…, refs/pull/…).
var refPattern = regexp.MustCompile(`^(refs/|[*?\[])`)

func (d *decoder) oidcRule(f field) *OIDCRule {
	m, ok := d.fields(f.Value, f.Path, oidcKeys...)
	if !ok {
		return nil
	}
	if len(resolve(f.Value).Content) == 0 {
		d.problemf(f.Value, f.Path, "names no refs and no environments, so it would restrict nothing; list refs, environments or both")
		return nil
	}
	if len(m) == 0 {
		return nil // only unknown keys, each a problem already
	}
	rule := &OIDCRule{}
	if v, ok := m["refs"]; ok {
		rule.Refs = d.nonEmpty(v, d.strings(v, d.refGlob), "a ref glob, like refs/heads/main")
	}
	if v, ok := m["environments"]; ok {
		rule.Environments = d.nonEmpty(v, d.strings(v, nil), "a GitHub Environment, like production")
	}
	return rule
}

// nonEmpty reports a list given empty: it would refuse every workflow,
// which is more likely an unfinished list than a wish.
func (d *decoder) nonEmpty(f field, got []string, example string) []string {
	if n := f.Value; n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		d.problemf(n, f.Path, "is empty, so it would refuse every workflow; list at least one, %s", example)
	}
	return got
}

func (d *decoder) refGlob(f field) (string, bool) {
	s, ok := d.str(f)
	if !ok {
		return "", false
	}
	if _, err := CompileRefGlob(s); err != nil {
		d.problemf(f.Value, f.Path, "invalid pattern: %v", err)
		return "", false
	}
	if !refPattern.MatchString(s) {
		d.problemf(f.Value, f.Path, "%q never matches: a token's ref claim is a full ref, like refs/heads/%s or refs/tags/%s", s, s, s)
		return "", false
	}
	return s, true
}
