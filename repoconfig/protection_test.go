package repoconfig

import (
	"slices"
	"strings"
	"testing"
)

const plainProtectedDoc = `version: 1
apps:
  shop:
    environments:
      prod:
        cluster: prod-eu
        targets:
          - {host: us1-01, labels: {region: us-1}}
          - {host: eu1-01, labels: {region: eu-1}}
        protection_rule: {enabled: true, gates: true}
        freezes:
          - {start: "2026-12-24T00:00:00Z", end: "2026-12-27T00:00:00Z", reason: holidays}
`

// An environment without a rollout still gets freezes and the protection
// rule: plain environment: jobs are what the rule is for.
func TestFreezesAndProtectionRuleWithoutARollout(t *testing.T) {
	cfg, problems := Load([]byte(plainProtectedDoc))
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	env, _ := cfg.Environment("shop", "prod")
	if !env.ProtectionRule.Enabled || !env.ProtectionRule.Gates {
		t.Errorf("protection rule = %+v, want enabled with gates", env.ProtectionRule)
	}
	if len(env.Freezes) != 1 || env.Freezes[0].Reason != "holidays" {
		t.Errorf("freezes = %+v, want the holidays window", env.Freezes)
	}
	if got := strings.Join(env.Regions, ","); got != "eu-1,us-1" {
		t.Errorf("regions = %q, want eu-1,us-1 (sorted)", got)
	}
	if env.Plan != nil {
		t.Errorf("a plan without rollout: %+v", env.Plan)
	}
}

// The environment's freezes hold the rollout's stages too.
func TestEnvironmentFreezesJoinTheRolloutPlan(t *testing.T) {
	doc := wavesDoc + `        freezes:
          - {weekly: {days: [sat, sun], from: "00:00", to: "24:00"}, regions: [eu-1], reason: weekend}
`
	cfg, problems := Load([]byte(doc))
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	env, _ := cfg.Environment("shop", "prod")
	if env.Plan == nil || len(env.Plan.Freezes) != 1 || env.Plan.Freezes[0].Reason != "weekend" {
		t.Fatalf("plan freezes = %+v, want the environment's weekend window", env.Plan)
	}
}

func TestABadFreezeIsAProblemWithItsPath(t *testing.T) {
	bad := strings.Replace(plainProtectedDoc, `end: "2026-12-27T00:00:00Z"`, `end: "soon"`, 1)
	got := strings.Join(Validate("ripcord.yml", []byte(bad)), "\n")
	if !strings.Contains(got, "apps.shop.environments.prod.freezes[0].end") {
		t.Fatalf("problems do not name the bad end:\n%s", got)
	}
}

// A rollout without targets used to crash the loader (a nil node).
func TestARolloutWithoutTargetsIsAProblem(t *testing.T) {
	doc := `version: 1
apps:
  shop:
    environments:
      prod:
        cluster: c
        rollout:
          waves: [{name: all, select: "region=eu-1"}]
`
	got := strings.Join(Validate("ripcord.yml", []byte(doc)), "\n")
	if !strings.Contains(got, "ripcord.yml:8:11: apps.shop.environments.prod.rollout: a rollout needs targets") {
		t.Fatalf("problems:\n%s", got)
	}
}

// A wave's parallel is checked against the server's max_parallel.
func TestParallelIsCheckedAgainstTheServersMaxParallel(t *testing.T) {
	doc := strings.Replace(wavesDoc, `{name: canary, select: "canary=true", bake: 15m}`, `{name: canary, select: "canary=true", bake: 15m, parallel: 8}`, 1)
	if got := ValidateWith("ripcord.yml", []byte(doc), Options{}); len(got) != 0 {
		t.Fatalf("parallel 8 under the default 16: %v", got)
	}
	got := strings.Join(ValidateWith("ripcord.yml", []byte(doc), Options{MaxParallel: 4}), "\n")
	if !strings.Contains(got, "parallel 8 is more than this server allows (max_parallel 4)") {
		t.Fatalf("with max_parallel 4:\n%s", got)
	}
}

// A freeze holds stages and deployments by their targets' regions, so an
// environment's freeze naming a region none of its targets is in (a typo)
// would never hold anything: it is refused at the region, naming those that
// exist, with or without a rollout.
func TestAnEnvironmentFreezeOnARegionNoTargetIsInIsRefused(t *testing.T) {
	typo := `          - {weekly: {days: [fri], from: "16:00", to: "08:00"}, regions: [eu-1, eu-wset], reason: fridays}
`
	noTargets := `version: 1
apps:
  shop:
    environments:
      prod:
        cluster: prod-eu
        protection_rule: {enabled: true}
        freezes:
` + typo
	for _, tc := range []struct{ name, doc, want string }{
		{"without a rollout", plainProtectedDoc + typo,
			`ripcord.yml:13:81: apps.shop.environments.prod.freezes[1].regions[1]: freeze region "eu-wset" is the region of no target, so the window would hold nothing; the regions are eu-1, us-1`},
		{"with a rollout", wavesDoc + "        freezes:\n" + typo,
			`ripcord.yml:17:81: apps.shop.environments.prod.freezes[0].regions[1]: freeze region "eu-wset" is the region of no target, so the window would hold nothing; the regions are eu-1`},
		{"without targets", noTargets,
			`ripcord.yml:9:75: apps.shop.environments.prod.freezes[0].regions[0]: freeze region "eu-1" is the region of no target, so the window would hold nothing; there are no targets`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Validate("ripcord.yml", []byte(tc.doc))
			if !slices.Contains(got, tc.want) {
				t.Fatalf("problems:\n%s\nwant %s", strings.Join(got, "\n"), tc.want)
			}
		})
	}
	// The regions that exist are no problem.
	ok := plainProtectedDoc + strings.Replace(typo, "eu-1, eu-wset", "eu-1, us-1", 1)
	if got := Validate("ripcord.yml", []byte(ok)); len(got) > 0 {
		t.Errorf("a freeze on the targets' regions: %q", got)
	}
}
