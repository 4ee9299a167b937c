package status

import (
	"fmt"
	"strings"
)

// maxNodes bounds the flowchart: GitHub renders a few hundred nodes poorly,
// and the table already lists every stage.
const maxNodes = 100

// classDefs colour the nodes by state.
var classDefs = []string{
	"classDef pending fill:#f6f8fa,stroke:#8c959f,color:#24292f",
	"classDef running fill:#ddf4ff,stroke:#0969da,color:#0a3069",
	"classDef baking fill:#fff8c5,stroke:#bf8700,color:#4d2d00",
	"classDef succeeded fill:#dafbe1,stroke:#1a7f37,color:#044f1e",
	"classDef failed fill:#ffebe9,stroke:#cf222e,color:#82071e",
	"classDef rolledback fill:#fbefff,stroke:#8250df,color:#3e1f79",
	"classDef approval fill:#fff8c5,stroke:#9a6700,color:#4d2d00",
}

// node is one box of the chart: a stage, a run of collapsed stages, or the
// approval after a stage.
type node struct {
	label, class string
	approval     bool
}

// Mermaid renders the stages in order as a left-to-right flowchart, one
// node per stage coloured by its state, with the approvals between waves
// as diamonds. Past maxNodes, consecutive stages of the same wave and state
// are drawn as one node, and what still does not fit as a final node.
func Mermaid(s Status) string {
	nodes := stageNodes(s.Rollout.Stages, false)
	if len(nodes) > maxNodes {
		nodes = stageNodes(s.Rollout.Stages, true)
	}
	if len(nodes) > maxNodes {
		hidden := len(nodes) - (maxNodes - 1)
		nodes = append(nodes[:maxNodes-1], node{label: fmt.Sprintf("+%d more", hidden), class: "pending"})
	}
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for i, n := range nodes {
		left, right := "[", "]"
		if n.approval {
			left, right = "{", "}"
		}
		fmt.Fprintf(&b, "  n%d%s\"%s\"%s:::%s\n", i, left, label(n.label), right, n.class)
	}
	for i := 1; i < len(nodes); i++ {
		fmt.Fprintf(&b, "  n%d --> n%d\n", i-1, i)
	}
	for _, c := range classDefs {
		b.WriteString("  " + c + "\n")
	}
	return b.String()
}

func stageNodes(stages []Stage, collapse bool) []node {
	var out []node
	for i := 0; i < len(stages); i++ {
		st := stages[i]
		n := node{label: st.Name, class: class(st.State)}
		if collapse {
			j := i
			for j+1 < len(stages) && stages[j+1].Wave == st.Wave && stages[j+1].State == st.State &&
				stages[j].Approval == "" {
				j++
			}
			if j > i {
				n.label = fmt.Sprintf("%s ×%d (%s … %s)", st.Wave, j-i+1, st.Name, stages[j].Name)
				i, st = j, stages[j]
			}
		}
		out = append(out, n)
		if st.Approval != "" {
			out = append(out, node{label: "approval: " + st.Approval, class: approvalClass(st.Approval), approval: true})
		}
	}
	return out
}

func class(s StageState) string {
	switch s {
	case StageRunning, StageBaking, StageSucceeded, StageFailed:
		return string(s)
	case StageRolledBack:
		return "rolledback"
	}
	return "pending"
}

func approvalClass(state string) string {
	switch state {
	case "approved":
		return "succeeded"
	case "rejected", "expired":
		return "failed"
	}
	return "approval"
}

// label escapes text for a quoted Mermaid label.
func label(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "\n", " ", "<", "#lt;", ">", "#gt;").Replace(s)
}
