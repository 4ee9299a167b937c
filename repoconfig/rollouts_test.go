package repoconfig

import (
	"strings"
	"testing"
)

const wavesDoc = `version: 1
apps:
  shop:
    environments:
      prod:
        cluster: prod-eu
        rollback: {mode: workflow, workflow: deploy.yml, input: version}
        targets:
          - {host: eu1-a-01, labels: {region: eu-1, az: eu-1a, canary: "true"}}
          - {host: eu1-a-02, labels: {region: eu-1, az: eu-1a}}
          - {host: eu1-b-01, labels: {region: eu-1, az: eu-1b}}
        rollout:
          waves:
            - {name: canary, select: "canary=true", bake: 15m}
            - {name: eu-1, select: "region=eu-1, canary!=true", by: az, bake: 10m}
`

func TestRolloutsArePlannedWhenTheFileLoads(t *testing.T) {
	cfg, problems := Load([]byte(wavesDoc))
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	env, _ := cfg.Environment("shop", "prod")
	if env.Plan == nil || strings.Join(env.Plan.StageNames(), ", ") != "canary, eu-1/eu-1a, eu-1/eu-1b" {
		t.Fatalf("plan = %+v, want stages canary, eu-1/eu-1a, eu-1/eu-1b", env.Plan)
	}
}

func TestAWaveThatSelectsNothingIsAProblemWithItsLine(t *testing.T) {
	bad := strings.Replace(wavesDoc, `select: "canary=true"`, `select: "canary=yes"`, 1)
	got := strings.Join(Validate("ripcord.yml", []byte(bad)), "\n")
	for _, want := range []string{
		"ripcord.yml:14:38: apps.shop.environments.prod.rollout.waves[0].select: wave canary selects no target",
		"ripcord.yml:9:13: apps.shop.environments.prod.targets[0]: eu1-a-01 is selected by no wave",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Validate =\n%s\nwant a line %q", got, want)
		}
	}
}
