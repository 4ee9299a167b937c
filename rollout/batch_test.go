package rollout

import (
	"slices"
	"testing"
)

func TestQuantityOf(t *testing.T) {
	tests := []struct {
		name string
		q    Quantity
		n    int
		want int
	}{
		{"25% of 3 rounds down to 0, so at least 1", Percent(25), 3, 1},
		{"50% of 40 is 20", Percent(50), 40, 20},
		{"25% of 10 rounds down", Percent(25), 10, 2},
		{"100% is the whole pass", Percent(100), 7, 7},
		{"a number is itself", Number(3), 10, 3},
		{"a number above the pass is kept (the batch is just smaller)", Number(5), 2, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.q.Of(tt.n); got != tt.want {
				t.Errorf("%v of %d: got %d, want %d", tt.q, tt.n, got, tt.want)
			}
		})
	}
}

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		in      string
		want    Quantity
		wantErr bool
	}{
		{"3", Number(3), false},
		{"25%", Percent(25), false},
		{"100%", Percent(100), false},
		{"0", Quantity{}, true},
		{"0%", Quantity{}, true},
		{"101%", Quantity{}, true},
		{"-1", Quantity{}, true},
		{"25x", Quantity{}, true},
		{"2.5%", Quantity{}, true},
		{"", Quantity{}, true},
	}
	for _, tt := range tests {
		got, err := ParseQuantity(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseQuantity(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func hostsN(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = sprintf("h%02d", i)
	}
	return out
}

func TestBatchSizes(t *testing.T) {
	tests := []struct {
		name  string
		hosts int
		mu    Quantity
		want  []int
	}{
		{"25% of 3 hosts: three batches of one", 3, Percent(25), []int{1, 1, 1}},
		{"50% of 40 hosts: two batches of 20 (the seed's parallel example)", 40, Percent(50), []int{20, 20}},
		{"a number leaves a smaller last batch", 7, Number(3), []int{3, 3, 1}},
		{"one host, one batch", 1, Percent(25), []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := batches("p", hostsN(tt.hosts), tt.mu, Number(1), DefaultMaxParallel)
			var got []int
			for i, b := range bs {
				got = append(got, len(b.Hosts))
				if b.Index != i || b.Name != StepName("deploy", "p", i) {
					t.Errorf("batch %d named %q index %d", i, b.Name, b.Index)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEffectiveParallel(t *testing.T) {
	tests := []struct {
		name          string
		batch         int
		parallel      Quantity
		maxParallel   int
		want, wantReq int
	}{
		{"the seed's 10 at a time in a batch of 20", 20, Number(10), 16, 10, 10},
		{"capped by a small batch", 4, Number(10), 16, 4, 10},
		{"capped by the server's max_parallel", 40, Percent(100), 16, 16, 40},
		{"a percentage is of the batch", 20, Percent(50), 16, 10, 10},
		{"a percentage of a tiny batch is at least one", 1, Percent(10), 16, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := batches("p", hostsN(tt.batch), Number(tt.batch), tt.parallel, tt.maxParallel)[0]
			if b.Parallel != tt.want || b.ParallelRequested != tt.wantReq {
				t.Errorf("parallel %d (requested %d), want %d (requested %d)", b.Parallel, b.ParallelRequested, tt.want, tt.wantReq)
			}
		})
	}
}

func TestWaveSettingsOverrideTheRollout(t *testing.T) {
	doc := `targets:
%s
rollout:
  max_unavailable: 50%%
  parallel: 10
  waves:
    - {name: canary, select: "tier=canary", parallel: 1, max_unavailable: 1}
    - {name: all, select: "tier=web"}
`
	var targets string
	for _, h := range []string{"canary-1", "canary-2", "canary-3", "canary-4"} {
		targets += "  - {host: " + h + ", labels: {tier: canary}}\n"
	}
	for _, h := range hostsN(40) {
		targets += "  - {host: " + h + ", labels: {tier: web}}\n"
	}
	plan := mustPlan(t, sprintf(doc, targets), PlanOptions{MaxParallel: 16})
	canary := plan.Stages[0].Passes[0]
	if got := batchSizes(canary); !slices.Equal(got, []int{1, 1, 1, 1}) || canary.Batches[0].ParallelRequested != 1 {
		t.Errorf("canary wave keeps one host at a time: sizes %v, parallel requested %d", got, canary.Batches[0].ParallelRequested)
	}
	all := plan.Stages[1].Passes[0]
	if got := batchSizes(all); !slices.Equal(got, []int{20, 20}) || all.Batches[0].Parallel != 10 {
		t.Errorf("wide wave uses the rollout's 50%% and parallel 10: sizes %v, parallel %d", got, all.Batches[0].Parallel)
	}
	if all.Batches[1].Name != "deploy@all#1" {
		t.Errorf("batch name: got %q", all.Batches[1].Name)
	}
}

func TestStepNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{StepName(StepDeploy, "eu-1/eu-1/eu-1b", 0), "deploy@eu-1/eu-1/eu-1b#0"},
		{StepName("activation", "canary", 2), "activation@canary#2"},
		{GateReadName("eu-1/eu-1/eu-1b", 0, 3), "gate@eu-1/eu-1/eu-1b#0.3"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
