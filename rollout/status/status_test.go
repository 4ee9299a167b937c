package status

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/rollout"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// seedJSON is the seed's status example with its "…" passes written out.
const seedJSON = `{
  "state": "ERROR",
  "rollout_progress": "2/4",
  "rollout": {
    "status": "failed",
    "stage": "resto/eu-2a+us-1a",
    "on_failure": "stop",
    "stages": [
      {"name": "canary", "wave": "canary", "state": "succeeded", "approval": "approved", "passes": [{"name": "canary", "region": "eu-1", "az": "eu-1a", "hosts": ["eu1-a-01"]}]},
      {"name": "eu-1/eu-1b", "wave": "eu-1", "state": "succeeded", "passes": [{"name": "eu-1/eu-1/eu-1b", "region": "eu-1", "az": "eu-1b", "hosts": ["eu1-b-01", "eu1-b-02"]}]},
      {"name": "resto/eu-2a+us-1a", "wave": "resto", "state": "failed",
       "gate": "metric error-rate (us-1/us-1a): value 0.2 above max 0.01", "passes": [
        {"name": "resto/eu-2/eu-2a", "region": "eu-2", "az": "eu-2a", "hosts": ["eu2-a-01", "eu2-a-02"]},
        {"name": "resto/us-1/us-1a", "region": "us-1", "az": "us-1a", "hosts": ["us1-a-01", "us1-a-02"],
         "batches": [{"name": "deploy@resto/us-1/us-1a#0", "hosts": ["us1-a-01"], "state": "succeeded", "parallel": 1}]}]},
      {"name": "resto/eu-2b+us-1b", "wave": "resto", "state": "pending", "passes": [{"name": "resto/eu-2/eu-2b", "region": "eu-2", "az": "eu-2b", "hosts": ["eu2-b-01"]}]}
    ]
  }
}`

func seedStatus(t *testing.T) Status {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(seedJSON))
	dec.DisallowUnknownFields()
	var s Status
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("the seed's status does not decode into Status: %v", err)
	}
	return s
}

func TestSeedStatusJSONRoundTrips(t *testing.T) {
	s := seedStatus(t)
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(seedJSON)); err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Errorf("JSON differs from the seed's:\ngot  %s\nwant %s", got, want.String())
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

func TestSeedSummaryGolden(t *testing.T) {
	golden(t, "seed.md", Summary(seedStatus(t)))
}

func TestPausedForAFreezeGolden(t *testing.T) {
	s := seedStatus(t)
	s.State, s.Rollout.Status = StateRunning, PausedFreeze
	s.Rollout.Paused = `freeze "weekend" (weekly sat,sun 18:00-24:00 Europe/Rome, regions us-1) until 2026-11-28T23:00:00Z`
	s.Rollout.Stages[2].State, s.Rollout.Stages[2].Gate = StagePending, ""
	s.Rollout.Stage = s.Rollout.Stages[2].Name
	golden(t, "paused-freeze.md", Markdown(s))
}

func TestNewFromPlan(t *testing.T) {
	cfg, problems := rollout.Parse([]byte(`targets:
  - {host: c1, labels: {region: eu-1, az: eu-1a, canary: "true"}}
  - {host: a1, labels: {region: eu-1, az: eu-1a}}
  - {host: b1, labels: {region: eu-1, az: eu-1b}}
rollout:
  waves:
    - {name: canary, select: "canary=true"}
    - {name: eu-1, select: "canary!=true", by: az, parallel: 3}
  approvals_between: [canary]
`))
	if len(problems) > 0 {
		t.Fatal(rollout.Problems(problems))
	}
	plan, problems := rollout.NewPlan(cfg.Rollout, cfg.Targets, rollout.PlanOptions{})
	if len(problems) > 0 {
		t.Fatal(rollout.Problems(problems))
	}
	s := New(plan)
	if s.RolloutProgress != "0/3" || s.Rollout.Stage != "canary" || s.Rollout.OnFailure != "stop" || s.Rollout.Status != Running {
		t.Errorf("status %+v", s)
	}
	if a := s.Rollout.Stages[0].Approval; a != "pending" {
		t.Errorf("canary approval %q", a)
	}
	b := s.Rollout.Stages[1].Passes[0].Batches[0]
	if b.Name != "deploy@eu-1/eu-1/eu-1a#0" || b.Parallel != 1 || b.ParallelRequested != 3 {
		t.Errorf("batch %+v: a reduced parallel shows what was asked", b)
	}
	s.Rollout.Stages[0].State = StageSucceeded
	if got := Progress(s.Rollout.Stages); got != "1/3" {
		t.Errorf("Progress = %s", got)
	}
}

func TestCellsCannotBreakTheTable(t *testing.T) {
	s := seedStatus(t)
	s.Rollout.Stages[2].Gate = "probe http://x/a|b: status 503\nexpected 200 " + strings.Repeat("é", 400)
	md := Markdown(s)
	row := strings.Split(md, "\n")[6]
	if strings.Count(row, " | ") != 5 || strings.Contains(row, "a|b") || len(row) > 2*maxCell+200 {
		t.Errorf("row broken or not capped: %q", row)
	}
	// The reading quotes a URL, so the cell is fenced: the … is the last
	// character of its code span.
	if !strings.HasSuffix(strings.TrimSpace(row), "…` |") {
		t.Errorf("a capped cell ends with …: %q", row)
	}
}

func TestHugeRolloutStaysWithinGitHubsLimit(t *testing.T) {
	s := Status{State: StateRunning, Rollout: Rollout{Status: Running, OnFailure: "stop"}}
	for i := range 3000 {
		st := Stage{Name: fmt.Sprintf("wave-%d/az-%04d+az-%04d", i/100, i, i+1), Wave: fmt.Sprintf("wave-%d", i/100), State: StagePending,
			Gate: strings.Repeat("x", 50)}
		if i < 250 {
			st.State = StageSucceeded
		}
		for p := range 6 {
			st.Passes = append(st.Passes, Pass{Name: fmt.Sprintf("p%d", p), Hosts: []string{"h"}})
		}
		s.Rollout.Stages = append(s.Rollout.Stages, st)
	}
	s.RolloutProgress = Progress(s.Rollout.Stages)
	sum := Summary(s)
	if len(sum) > MaxSummary {
		t.Fatalf("summary is %d bytes, over %d", len(sum), MaxSummary)
	}
	if !strings.Contains(sum, "more stages not shown") {
		t.Error("a truncated table says how many stages it leaves out")
	}
	chart := Mermaid(s)
	if n := strings.Count(chart, ":::"); n > maxNodes {
		t.Errorf("chart has %d nodes, over %d", n, maxNodes)
	}
	if !strings.Contains(chart, `"wave-0 ×100 (wave-0/az-0000+az-0001 … wave-0/az-0099+az-0100)"`) {
		t.Errorf("stages of one wave and state are drawn as one node:\n%.600s", chart)
	}
}

func TestMermaidEscapesLabels(t *testing.T) {
	s := Status{Rollout: Rollout{Stages: []Stage{{Name: `a"b<c>`, State: StageFailed}}}}
	if got := Mermaid(s); !strings.Contains(got, `n0["a#quot;b#lt;c#gt;"]:::failed`) {
		t.Errorf("got %s", got)
	}
}
