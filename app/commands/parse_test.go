package commands

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		kind  Kind
		cmd   string   // for Run
		args  []string // for Run
		reply string   // a part of the reply, for Reply
	}{
		{"a bare retry", "/ripcord retry", Run, Retry, nil, ""},
		{"retry after some words on an earlier line", "The deploy flaked.\r\n/ripcord retry\r\n", Run, Retry, nil, ""},
		{"upper case still counts", "/Ripcord RETRY", Run, Retry, nil, ""},
		{"rollback keeps its reason words", "/ripcord rollback  the new build leaks memory", Run, Rollback, []string{"the", "new", "build", "leaks", "memory"}, ""},
		{"approve parses", "/ripcord approve", Run, Approve, nil, ""},
		{"up to three spaces in is a paragraph", "   /ripcord retry", Run, Retry, nil, ""},
		{"the first command wins", "/ripcord retry\n/ripcord rollback", Run, Retry, nil, ""},
		{"a command after a closed fence counts", "```\nlog\n```\n/ripcord retry", Run, Retry, nil, ""},
		{"quoted retry in a reply", "> /ripcord retry\nno thanks", Ignore, "", nil, ""},
		{"quoted retry nested in a list quote", "  > /ripcord retry", Ignore, "", nil, ""},
		{"retry inside a fenced code block", "Run this:\n```sh\n/ripcord retry\n```", Ignore, "", nil, ""},
		{"retry inside a tilde fence", "~~~\n/ripcord retry\n~~~", Ignore, "", nil, ""},
		{"a backtick fence is not closed by tildes", "```\n~~~\n/ripcord retry\n", Ignore, "", nil, ""},
		{"retry indented as code", "    /ripcord retry", Ignore, "", nil, ""},
		{"retry in an HTML comment", "<!--\n/ripcord retry\n-->", Ignore, "", nil, ""},
		{"mid-sentence mention", "please do not /ripcord retry yet", Ignore, "", nil, ""},
		{"a longer word is not the prefix", "/ripcords retry", Ignore, "", nil, ""},
		{"no command at all", "LGTM", Ignore, "", nil, ""},
		{"bare prefix answers with help", "/ripcord", Reply, "", nil, "| `/ripcord retry` |"},
		{"help", "/ripcord help", Reply, "", nil, "`commands:`"},
		{"a typo gets a suggestion", "/ripcord retyr", Reply, "", nil, "Did you mean `/ripcord retry`?"},
		{"a typo of rollback", "/ripcord rolback", Reply, "", nil, "Did you mean `/ripcord rollback`?"},
		{"nonsense gets no guess", "/ripcord deploy-everything", Reply, "", nil, "does not know the command `/ripcord deploy-everything`."},
		// A backtick in the word must not end the code span and turn
		// the rest into a mention in ripcord's own reply.
		{"a word with backticks stays code", "/ripcord a`@acme/security`", Reply, "", nil,
			"does not know the command `` /ripcord a`@acme/security` ``."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Parse(c.body)
			if got.Kind != c.kind {
				t.Fatalf("kind = %v, want %v (%+v)", got.Kind, c.kind, got)
			}
			switch c.kind {
			case Run:
				if got.Command.Name != c.cmd || !slices.Equal(got.Command.Args, c.args) {
					t.Errorf("command = %q %q, want %q %q", got.Command.Name, got.Command.Args, c.cmd, c.args)
				}
			case Reply:
				if !strings.Contains(got.Reply, c.reply) {
					t.Errorf("reply %q lacks %q", got.Reply, c.reply)
				}
			}
		})
	}
	if r := Parse("/ripcord deploy-everything"); strings.Contains(r.Reply, "Did you mean") {
		t.Errorf("a far-off word got a guess: %q", r.Reply)
	}
}

func TestSuggest(t *testing.T) {
	for word, want := range map[string]string{"retry": "retry", "rerty": "retry", "aprove": "approve", "hlep": "help", "xyz": "", "": ""} {
		if got := suggest(word); got != want {
			t.Errorf("suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// Help is where people learn a command's words, so each usage it shows is
// the one README.md documents: help that says `/ripcord rollback [reason]`
// hides `to RELEASE_ID`, and `/ripcord approve` alone is answered "Which
// rollout?".
func TestHelpShowsTheUsageREADMEDocuments(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	help := HelpText()
	for _, s := range Specs {
		if !strings.Contains(string(readme), "`"+s.Usage+"`") {
			t.Errorf("help shows %q, which README.md does not document", s.Usage)
		}
		if !strings.Contains(help, "`"+s.Usage+"`") {
			t.Errorf("help does not show %q", s.Usage)
		}
	}
}

// Rollback, approve and help work in issue comments too: help must not
// send people to pull requests for them, and says which command does need
// one. The header follows each command's OnIssues.
func TestHelpSaysWhichCommandsWorkOnIssues(t *testing.T) {
	first, _, _ := strings.Cut(HelpText(), "\n")
	want := "ripcord understands these commands in pull request and issue comments, one per comment, at the start of a line; " +
		"`/ripcord retry` works in pull request comments only:"
	if first != want {
		t.Errorf("help starts %q, want %q", first, want)
	}
	for _, c := range []struct {
		name     string
		onIssues []bool
		want     string
	}{
		{"none on issues", []bool{false, false}, "in pull request comments, one per comment, at the start of a line:"},
		{"all on issues", []bool{true, true}, "in pull request and issue comments, one per comment, at the start of a line:"},
		{"two need a pull request", []bool{false, false, true},
			"issue comments, one per comment, at the start of a line; `/ripcord a` and `/ripcord b` work in pull request comments only:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var specs []Spec
			for i, on := range c.onIssues {
				specs = append(specs, Spec{Name: string(rune('a' + i)), OnIssues: on})
			}
			if got := helpHeader(specs); !strings.HasSuffix(got, c.want) {
				t.Errorf("header %q, want it to end %q", got, c.want)
			}
		})
	}
}
