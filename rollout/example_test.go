package rollout_test

import (
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/rollout"
)

// A config written with the seed's camelCase keys is refused with the line
// and column of each key and the snake_case spelling to use instead.
func ExampleParse() {
	doc := `targets:
  - {host: eu1-a-01, labels: {region: eu-1, az: eu-1a}}
rollout:
  waves:
    - {name: eu-1, select: "region=eu-1", by: az, batchBake: 1m}
  maxUnavailable: 25%
`
	_, problems := rollout.Parse([]byte(doc))
	for _, p := range problems {
		fmt.Println(p)
	}
	// Output:
	// 5:51: rollout.waves[0].batchBake: unknown key "batchBake" in a wave: keys are snake_case, write batch_bake
	// 6:3: rollout.maxUnavailable: unknown key "maxUnavailable" in rollout: keys are snake_case, write max_unavailable
}

// A plan lists its stages in order, as `ripcord validate` prints them.
func ExampleNewPlan() {
	doc := `targets:
  - {host: eu1-a-01, labels: {region: eu-1, az: eu-1a, canary: "true"}}
  - {host: eu1-a-02, labels: {region: eu-1, az: eu-1a}}
  - {host: eu1-b-01, labels: {region: eu-1, az: eu-1b}}
  - {host: eu2-a-01, labels: {region: eu-2, az: eu-2a}}
  - {host: us1-a-01, labels: {region: us-1, az: us-1a}}
rollout:
  waves:
    - {name: canary, select: "canary=true", bake: 15m}
    - {name: eu-1, select: "region=eu-1, canary!=true", by: az, bake: 10m}
    - {name: resto, select: "region in (eu-2, us-1)", by: az, parallel_regions: 2}
`
	cfg, problems := rollout.Parse([]byte(doc))
	if len(problems) > 0 {
		fmt.Println(rollout.Problems(problems))
		return
	}
	plan, problems := rollout.NewPlan(cfg.Rollout, cfg.Targets, rollout.PlanOptions{})
	if len(problems) > 0 {
		fmt.Println(rollout.Problems(problems))
		return
	}
	fmt.Println("rollout.stages:", strings.Join(plan.StageNames(), ", "))
	fmt.Println(plan.Stages[3].Passes[1].Batches[0].Name)
	// Output:
	// rollout.stages: canary, eu-1/eu-1a, eu-1/eu-1b, resto/eu-2a+us-1a
	// deploy@resto/us-1/us-1a#0
}
