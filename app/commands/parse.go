package commands

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ripcord/ripcord/internal/mdtext"
)

// Prefix starts every command.
const Prefix = "/ripcord"

// Command names; the first three are repoconfig's (their permissions are
// set under commands: in .github/ripcord.yml).
const (
	Retry    = "retry"
	Rollback = "rollback"
	Approve  = "approve"
	Help     = "help"
)

// Spec describes one command for the help text.
type Spec struct {
	Name, Usage, Summary string
	// OnIssues: the command works in issue comments too, not only in pull
	// request comments (for a runner, its IssueRunner.RunsOnIssues).
	OnIssues bool
}

// Specs are the commands ripcord understands, in the order help lists them.
// A Usage is what the runner reads (rollbackflow.ParseArgs, rolloutflow's
// approve) and what README.md documents: help is where people learn it.
var Specs = []Spec{
	{Retry, "/ripcord retry", "re-run the failed jobs of the latest failed deploy workflow run of this pull request's head commit", false},
	{Rollback, "/ripcord rollback [to RELEASE_ID] [reason]", "roll the environment back to the previous eligible release, or to the release (or image digest) named after `to`", true},
	{Approve, "/ripcord approve <rollout id> [note]", "approve the waiting stage of a rollout; its id is in the `ripcord/rollout` check run", true},
	{Help, "/ripcord help", "show this help", true},
}

// Kind says what a comment asks of ripcord.
type Kind int

const (
	// Ignore: the comment holds no command (or only a quoted or fenced one).
	Ignore Kind = iota
	// Reply: answer with Result.Reply and do nothing else (help, typos).
	Reply
	// Run: run Result.Command.
	Run
)

// Command is one parsed command line.
type Command struct {
	Name string   // lower case, one of Retry, Rollback, Approve
	Args []string // the words after the name, as typed
	Line string   // the line it was read from, trimmed
}

// Result is what Parse found.
type Result struct {
	Kind    Kind
	Command Command
	Reply   string
}

var (
	// commandLine is line-anchored: /ripcord at the start of a line (up to
	// three spaces in, as markdown allows for a paragraph), then a space or
	// the end of the line, so "/ripcords" and "see /ripcord retry" are not commands.
	commandLine = regexp.MustCompile(`(?i)^ {0,3}/ripcord(?:[ \t]+(.*))?[ \t]*$`)
	fence       = regexp.MustCompile("^ {0,3}(```|~~~)")
	quote       = regexp.MustCompile(`^ {0,3}>`)
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
)

// Parse reads the first command in a comment body. Fenced code blocks,
// indented code, block quotes and HTML comments are skipped first, so quoting
// a command in a reply or showing it in an example does nothing.
func Parse(body string) Result {
	for _, line := range commandLines(body) {
		m := commandLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		words := strings.Fields(m[1])
		if len(words) == 0 {
			return Result{Kind: Reply, Reply: HelpText()}
		}
		name := strings.ToLower(words[0])
		switch name {
		case Help:
			return Result{Kind: Reply, Reply: HelpText()}
		case Retry, Rollback, Approve:
			return Result{Kind: Run, Command: Command{Name: name, Args: words[1:], Line: strings.TrimSpace(line)}}
		}
		return Result{Kind: Reply, Reply: unknownReply(words[0])}
	}
	return Result{Kind: Ignore}
}

// commandLines returns the lines that could hold a command: outside fenced
// code, not indented as code, not quoted.
func commandLines(body string) []string {
	body = htmlComment.ReplaceAllString(strings.ReplaceAll(body, "\r\n", "\n"), "")
	var out []string
	var inFence string
	for _, line := range strings.Split(body, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case inFence == "":
				inFence = m[1]
			case inFence == m[1]:
				inFence = ""
			}
			continue
		}
		if inFence != "" || quote.MatchString(line) || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			continue
		}
		out = append(out, line)
	}
	return out
}

func unknownReply(word string) string {
	msg := fmt.Sprintf("ripcord does not know the command %s.", mdtext.CodeSpan(Prefix+" "+word))
	if s := suggest(strings.ToLower(word)); s != "" {
		msg += fmt.Sprintf(" Did you mean `%s %s`?", Prefix, s)
	}
	return msg + "\n\n" + HelpText()
}

// HelpText lists the commands.
func HelpText() string {
	var b strings.Builder
	b.WriteString(helpHeader(Specs) + "\n\n")
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, s := range Specs {
		fmt.Fprintf(&b, "| `%s` | %s |\n", s.Usage, s.Summary)
	}
	b.WriteString("\nWho may run them is set under `commands:` in `.github/ripcord.yml` (by default, write access to the repository).")
	return b.String()
}

// helpHeader says where specs work, from their OnIssues: a header that
// says "pull request comments" alone sends people away from issues where
// most of them work.
func helpHeader(specs []Spec) string {
	var prOnly []string
	for _, s := range specs {
		if !s.OnIssues {
			prOnly = append(prOnly, "`"+Prefix+" "+s.Name+"`")
		}
	}
	const tail = ", one per comment, at the start of a line"
	switch len(prOnly) {
	case len(specs):
		return "ripcord understands these commands in pull request comments" + tail + ":"
	case 0:
		return "ripcord understands these commands in pull request and issue comments" + tail + ":"
	}
	verb := "works"
	if len(prOnly) > 1 {
		verb = "work"
	}
	list := strings.Join(prOnly[:len(prOnly)-1], ", ")
	if list != "" {
		list += " and "
	}
	list += prOnly[len(prOnly)-1]
	return "ripcord understands these commands in pull request and issue comments" + tail + "; " +
		list + " " + verb + " in pull request comments only:"
}
