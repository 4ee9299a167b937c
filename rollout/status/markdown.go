package status

import (
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/internal/mdtext"
)

// MaxSummary is GitHub's limit on a check run's output.summary (65,535
// characters). Lengths here are counted in bytes, which are never fewer.
const MaxSummary = 65535

// Cells are capped so that one long gate message or a wave of many passes
// cannot crowd the other stages out of the table.
const (
	maxCell       = 300
	maxPassesCell = 4
)

var stateIcon = map[StageState]string{
	StagePending:    "⏳",
	StageRunning:    "🔄",
	StageBaking:     "🔥",
	StageSucceeded:  "✅",
	StageFailed:     "❌",
	StageRolledBack: "↩️",
}

// Summary is the check run's summary: the table and, when it fits, the
// flowchart, within MaxSummary.
func Summary(s Status) string {
	md := Markdown(s)
	chart := "\n```mermaid\n" + Mermaid(s) + "```\n"
	if len(md)+len(chart) <= MaxSummary {
		return md + chart
	}
	return md
}

// Markdown renders the status as a headline and a table of stages. When
// the table would pass MaxSummary, the last rows are replaced by a line
// saying how many stages are not shown.
func Markdown(s Status) string {
	var b strings.Builder
	b.WriteString(headline(s))
	b.WriteString("\n\n| # | Stage | Wave | State | Passes | Gate |\n|---:|---|---|---|---|---|\n")
	for i, st := range s.Rollout.Stages {
		row := stageRow(i, st)
		rest := len(s.Rollout.Stages) - i
		more := moreRow(rest)
		if b.Len()+len(row)+len(more) > MaxSummary && rest > 1 {
			b.WriteString(more)
			break
		}
		b.WriteString(row)
	}
	return b.String()
}

func headline(s Status) string {
	r := s.Rollout
	line := fmt.Sprintf("**Rollout %s**", r.Status)
	if r.Stage != "" {
		line += fmt.Sprintf(" · stage `%s`", r.Stage)
	}
	line += fmt.Sprintf(" · %s stages passed · on_failure: %s", s.RolloutProgress, r.OnFailure)
	if r.Paused != "" {
		line += "\n\nPaused: " + cell(r.Paused)
	}
	if r.Rollback != nil {
		line += fmt.Sprintf("\n\nRollback %s", r.Rollback.Status)
		if len(r.Rollback.Stages) > 0 {
			line += ": " + cell(strings.Join(r.Rollback.Stages, ", "))
		}
		if r.Rollback.Reason != "" {
			line += " — " + cell(r.Rollback.Reason)
		}
	}
	if len(r.Drift) > 0 {
		line += "\n\n⚠️ Drift: the new version runs on " + cell(strings.Join(r.Drift, ", ")) +
			"; the other stages run the previous release. Release again or roll back."
	}
	return line
}

func stageRow(i int, st Stage) string {
	state := string(st.State)
	if icon, ok := stateIcon[st.State]; ok {
		state = icon + " " + state
	}
	if st.Approval != "" {
		state += " · approval " + st.Approval
	}
	return fmt.Sprintf("| %d | `%s` | %s | %s | %s | %s |\n",
		i+1, code(st.Name), cell(st.Wave), state, passesCell(st.Passes), cell(st.Gate))
}

func moreRow(n int) string {
	return fmt.Sprintf("| … | %d more stages not shown: see `ripcord rollout status` | | | | |\n", n)
}

func passesCell(ps []Pass) string {
	var parts []string
	for i, p := range ps {
		if i == maxPassesCell {
			parts = append(parts, fmt.Sprintf("+%d more", len(ps)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d %s)", p.Name, len(p.Hosts), plural(len(p.Hosts), "host", "hosts")))
	}
	return cell(strings.Join(parts, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// cell makes text safe inside a table cell: flat, and inert, since a
// cell may quote free text (an abort's reason, an upstream's answer in a
// gate's reading) that must not mention anyone or link anywhere in
// ripcord's name.
func cell(s string) string { return mdtext.Inert(flat(s)) }

// flat is s on one line, with no pipes, in at most maxCell bytes.
func flat(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ", "|", `\|`).Replace(s)
	if len(s) > maxCell {
		cut := maxCell
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// code is s for inside a code span (a stage's name): inert there already.
func code(s string) string { return strings.ReplaceAll(flat(s), "`", "'") }

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
