package rollout

import (
	"strings"
	"testing"
)

func TestProbeWorkflow(t *testing.T) {
	head := targetsDoc + "rollout:\n  waves: [{name: all, select: \"region!=x\"}]\n"
	if got := mustPlan(t, head, PlanOptions{}).ProbeWorkflow; got != DefaultProbeWorkflow {
		t.Errorf("default probe_workflow %q, want %q", got, DefaultProbeWorkflow)
	}
	if got := mustPlan(t, head+"  probe_workflow: probe.yaml\n", PlanOptions{}).ProbeWorkflow; got != "probe.yaml" {
		t.Errorf("probe_workflow %q, want probe.yaml", got)
	}
	ps := problemsOf(head+"  probe_workflow: .github/workflows/probe.yml\n", PlanOptions{})
	if len(ps) != 1 || ps[0].Path != "rollout.probe_workflow" || !strings.Contains(ps[0].Message, "must be a workflow file name") {
		t.Errorf("a probe workflow given as a path: problems %v", Problems(ps))
	}
}
