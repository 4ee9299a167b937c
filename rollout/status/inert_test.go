package status

import (
	"strings"
	"testing"
)

// Free text in the check run (an abort's reason from an API or CLI token
// holder, a gate's or a rollback's reason quoting an upstream) is shown as
// typed but cannot mention anyone, link anywhere or carry HTML: GitHub
// renders the summary as markdown in ripcord's name.
func TestFreeTextInTheCheckRunIsInert(t *testing.T) {
	for _, c := range []struct{ name, text, active string }{
		{"a mention in an abort's reason", "aborted by @alice: paging @acme/security", "@"},
		{"a markdown link", "see [the runbook](https://evil.example/x) now", "evil.example"},
		{"a bare URL", "details at https://evil.example/x", "evil.example"},
		{"a www autolink", "details at WWW.evil.example", "evil.example"},
		{"an email autolink", "write to bob@evil.example", "evil.example"},
		{"HTML", `<img src=x onerror="alert(1)"> <a href="https://evil.example">ok</a>`, "<"},
		{"an entity that renders as a mention", "ping &#64;alice", "&#64;"},
		{"a backtick that would end a code span", "a`@acme/security` b", "@acme"},
		{"an issue reference", "as in acme/other#1", "other#1"},
		{"over a line break and a pipe", "line one\n@alice | [x](https://evil.example)", "@"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := seedStatus(t)
			s.Rollout.Stages[2].Gate = c.text
			s.Rollout.Paused = c.text
			s.Rollout.Rollback = &Rollback{Status: "failed", Reason: c.text}
			md := Markdown(s)
			if out := outsideCode(md); strings.Contains(out, c.active) {
				t.Errorf("%q is rendered outside code in:\n%s", c.active, md)
			}
			shown := strings.NewReplacer("\n", " ", "|", `\|`).Replace(c.text)
			if n := strings.Count(md, shown); n != 3 {
				t.Errorf("the text is shown %d times as typed, want 3 (gate, paused, rollback):\n%s", n, md)
			}
			if row := strings.Split(md, "\n")[8]; strings.Count(row, " | ") != 5 {
				t.Errorf("the stage's row is broken: %q", row)
			}
		})
	}
}

// Plain prose stays prose: only text that could do something is fenced.
func TestPlainGateReadingIsNotFenced(t *testing.T) {
	s := seedStatus(t)
	const gate = "metric error-rate (us-1/us-1a): value 0.2 above max 0.01"
	s.Rollout.Stages[2].Gate = gate
	if md := Markdown(s); !strings.Contains(md, "| "+gate+" |") {
		t.Errorf("want the gate reading as plain text in its cell:\n%s", md)
	}
}

// outsideCode is md without its code spans, as CommonMark reads them: a
// run of n backticks opens a span that the next run of exactly n closes;
// a run that nothing closes is text.
func outsideCode(md string) string {
	var b strings.Builder
	for i := 0; i < len(md); {
		if md[i] != '`' {
			b.WriteByte(md[i])
			i++
			continue
		}
		n := run(md, i)
		end := -1
		for j := i + n; j < len(md); {
			if md[j] != '`' {
				j++
				continue
			}
			if m := run(md, j); m == n {
				end = j + m
				break
			} else {
				j += m
			}
		}
		if end < 0 {
			b.WriteString(md[i : i+n])
			i += n
			continue
		}
		i = end
	}
	return b.String()
}

func run(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}
